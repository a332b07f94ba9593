// Package smallfile reads a file a user named (a config, an env file, a
// file to import) without trusting what it is: only a regular file, and
// only up to a bound.
package smallfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrNotRegular is the error (errors.Is) of a path that is not a regular
// file: a FIFO, a device, a directory, a socket.
var ErrNotRegular = errors.New("not a regular file")

// TooLargeError is the error of a file larger than the bound.
type TooLargeError struct{ Max int }

func (e *TooLargeError) Error() string { return fmt.Sprintf("larger than %d bytes", e.Max) }

// Read reads the regular file at path, of at most max bytes. It never
// blocks on what path is: O_NONBLOCK keeps the open of a FIFO nobody
// writes from waiting (it changes nothing for a regular file), and
// anything but a regular file is refused before a byte is read, so a
// device that never ends is not read either. A file that grows past max
// while read is refused too.
func Read(path string, max int) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if m := st.Mode(); !m.IsRegular() {
		return nil, fmt.Errorf("%w but %s", ErrNotRegular, kind(m))
	}
	if st.Size() > int64(max) {
		return nil, &TooLargeError{Max: max}
	}
	data, err := io.ReadAll(io.LimitReader(f, int64(max)+1))
	if err != nil {
		return nil, err
	}
	if len(data) > max {
		return nil, &TooLargeError{Max: max}
	}
	return data, nil
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "an unusual file"
}
