package logs

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// openPty opens a pseudo-terminal for a program's output: the master, which
// the pump reads, and the slave, the program's stdout and stderr. Output
// processing is off, so the program's "\n" stays "\n" (a terminal would
// make it "\r\n"), and nothing typed is echoed. ws, when not nil, is its
// size (else the kernel's 0x0, "unknown").
func openPty(ws *WinSize) (master, slave *os.File, err error) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("opening a pseudo-terminal: %w", err)
	}
	fail := func(what string, err error) (*os.File, *os.File, error) {
		m.Close()
		return nil, nil, fmt.Errorf("pseudo-terminal: %s: %w", what, err)
	}
	var s *os.File
	err = controlFd(m, func(fd int) error {
		if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
			return err
		}
		// TIOCGPTPEER opens this master's slave without a path lookup;
		// the path is the fallback for kernels before 4.13.
		// Its argument is the open flags of the slave.
		sfd, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.TIOCGPTPEER, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC)
		if errno == 0 {
			s = os.NewFile(sfd, "/dev/pts/peer")
			return nil
		}
		n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
		if err != nil {
			return err
		}
		s, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
		return err
	})
	if err != nil {
		return fail("opening the slave", err)
	}
	err = controlFd(s, func(fd int) error {
		t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
		if err != nil {
			return err
		}
		t.Oflag &^= unix.OPOST
		t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON
		if err := unix.IoctlSetTermios(fd, unix.TCSETS, t); err != nil {
			return err
		}
		if ws != nil {
			return unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: ws.Rows, Col: ws.Cols})
		}
		return nil
	})
	if err != nil {
		s.Close()
		return fail("setting up the slave", err)
	}
	return m, s, nil
}

// resizePty sets the size of the pseudo-terminal whose master is m, and
// says whether that changed it and whether the kernel told a foreground
// process group (it does when the size changed and the terminal is a
// session's controlling one).
func resizePty(m *os.File, ws WinSize) (changed, told bool, err error) {
	err = controlFd(m, func(fd int) error {
		old, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ)
		if err != nil {
			return err
		}
		if old.Row == ws.Rows && old.Col == ws.Cols {
			return nil
		}
		if err := unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: ws.Rows, Col: ws.Cols, Xpixel: old.Xpixel, Ypixel: old.Ypixel}); err != nil {
			return err
		}
		changed = true
		// On a master TIOCGPGRP names the slave's foreground group, 0
		// when the slave is no session's terminal.
		pgrp, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
		told = err == nil && pgrp > 0
		return nil
	})
	return changed, told, err
}

// isPtyMaster reports whether f is the master of a pseudo-terminal.
func isPtyMaster(f *os.File) bool {
	return controlFd(f, CheckPtyMaster) == nil
}

// controlFd runs f on f's descriptor without taking it out of the poller.
func controlFd(file *os.File, f func(fd int) error) error {
	rc, err := file.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = f(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// CheckPtyMaster checks that fd is the master of a pseudo-terminal, as a
// new binary must before it reads an inherited descriptor as one: only a
// master answers TIOCGPTN (its slave, a terminal or any other character
// device refuses it).
func CheckPtyMaster(fd int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFCHR {
		return fmt.Errorf("descriptor %d is not a character device", fd)
	}
	if _, err := unix.IoctlGetInt(fd, unix.TIOCGPTN); err != nil {
		return fmt.Errorf("descriptor %d is not a pseudo-terminal master: %w", fd, err)
	}
	return nil
}
