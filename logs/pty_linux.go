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
// make it "\r\n"), and nothing typed is echoed. The size is that of our
// own stdout when it is a terminal.
func openPty() (master, slave *os.File, err error) {
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
		if ws, err := unix.IoctlGetWinsize(int(os.Stdout.Fd()), unix.TIOCGWINSZ); err == nil {
			_ = unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, ws)
		}
		return nil
	})
	if err != nil {
		s.Close()
		return fail("setting up the slave", err)
	}
	return m, s, nil
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
