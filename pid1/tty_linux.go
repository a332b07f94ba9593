package pid1

import (
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// ttyMode is how the command gets the terminal.
type ttyMode int

const (
	// ttyNone: we have no controlling terminal (a container without -t, a
	// service); the command gets a process group of its own in our
	// session, as under tini. A new session would cut it off from
	// nothing, and creating one (and the scheduler's autogroup that comes
	// with it) is a tenth of a millisecond of every start.
	ttyNone ttyMode = iota
	// ttyDetached: we have a controlling terminal, but stdin is not it
	// or we are in the background; the command gets a new session
	// without a terminal, so that it neither stops on the terminal's job
	// control nor takes it over from the shell.
	ttyDetached
	// ttySession: we led the terminal's session (PID 1 of `docker run
	// -it`) and gave it up; the command's new session acquires it.
	ttySession
	// ttyForeground: we are a foreground job of someone else's session (a
	// shell's); the command gets its own process group, in the foreground.
	// Taking the terminal into a new session would steal it from the shell.
	ttyForeground
)

func (m ttyMode) String() string {
	switch m {
	case ttySession:
		return "session"
	case ttyForeground:
		return "foreground"
	case ttyDetached:
		return "detached"
	}
	return "none"
}

// sysProcAttr places the command in its own group, and session where m
// says, with the terminal as m says. Files[0] of the child is stdin.
// A value, not a pointer: the caller's stays on its stack.
func (m ttyMode) sysProcAttr(stdin *os.File) syscall.SysProcAttr {
	switch m {
	case ttySession:
		// TIOCSCTTY on the child's fd 0 (the terminal has no session now).
		return syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	case ttyForeground:
		// Unlike Setctty, Foreground takes the parent's descriptor.
		return syscall.SysProcAttr{Setpgid: true, Foreground: true, Ctty: int(stdin.Fd())}
	case ttyDetached:
		return syscall.SysProcAttr{Setsid: true}
	}
	return syscall.SysProcAttr{Setpgid: true}
}

// takeTTY decides how the command gets the terminal, and as a session
// leader gives it up (TIOCNOTTY) so the command's session can acquire it.
// Giving it up makes the kernel send SIGHUP and SIGCONT to our process
// group; they are ignored for that moment, so it must run before the
// signals are Notify'd (which takes them back).
func takeTTY(stdin *os.File, log *slog.Logger) ttyMode {
	fd := int(stdin.Fd())
	sid, err := unix.IoctlGetInt(fd, unix.TIOCGSID) // fails unless it is our controlling terminal
	if err != nil {
		return noTTY()
	}
	own, err := unix.Getsid(0)
	if err != nil || sid != own {
		return noTTY()
	}
	if own == os.Getpid() {
		signal.Ignore(unix.SIGHUP, unix.SIGCONT)
		err := unix.IoctlSetInt(fd, unix.TIOCNOTTY, 0)
		signal.Reset(unix.SIGHUP, unix.SIGCONT)
		if err == nil {
			return ttySession
		}
		log.Debug("cannot give the terminal up; keeping the command in our session", "err", err)
	}
	fg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	if err != nil || fg != unix.Getpgrp() {
		return ttyDetached // a background job must leave the terminal to the shell
	}
	return ttyForeground
}

// noTTY tells, when stdin is not our controlling terminal, whether we
// have one at all. Only the kernel's "none" (ENXIO from /dev/tty) makes
// it ttyNone; any other answer (no /dev/tty in this mount namespace)
// keeps the command in a session of its own, cut off from a terminal we
// may have.
func noTTY() ttyMode {
	fd, err := unix.Open("/dev/tty", unix.O_RDONLY|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err == nil {
		_ = unix.Close(fd)
		return ttyDetached
	}
	if err == unix.ENXIO {
		return ttyNone
	}
	return ttyDetached
}

// giveForegroundBack puts our process group back in the foreground, for
// a parent that does not do it itself (a non-interactive one). From the
// background that ioctl sends us SIGTTOU unless it is ignored; nothing is
// forked after this, so ignoring it leaks into no command.
func giveForegroundBack(stdin *os.File) {
	fd := int(stdin.Fd())
	signal.Ignore(unix.SIGTTOU)
	defer signal.Reset(unix.SIGTTOU)
	if _, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP); err != nil {
		return
	}
	_ = unix.IoctlSetPointerInt(fd, unix.TIOCSPGRP, unix.Getpgrp())
}
