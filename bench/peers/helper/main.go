//go:build linux

// Command helper is the program the peers benchmark has every supervisor
// run, so that the figures come from timestamps the program itself writes,
// the same way under each supervisor. It imports little, so that it starts
// fast and alike everywhere.
//
//	helper crash FILE          append "s NS" at start and "e NS" just before exit 1
//	helper spew BYTES FILE     write BYTES/100 numbered 100-byte lines to stdout,
//	                           then "start NS" and "end NS" to FILE, then wait for a signal
//
// NS is CLOCK_REALTIME in nanoseconds. Run as "./run" (a symlink in an s6,
// runit or daemontools service directory) it reads its arguments from
// ./bench-args, one per line, so no shell sits between the supervisor and
// the measured program.
package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// LineSize is the size of one spew line, newline included.
const LineSize = 100

func main() {
	now := realtime() // first: the start of the program as the supervisor sees it
	args := os.Args[1:]
	if filepath.Base(os.Args[0]) == "run" {
		// s6-supervise passes arguments of its own; ours are in the file.
		b, err := os.ReadFile("bench-args")
		if err != nil {
			fail("run as ./run without ./bench-args: " + err.Error())
		}
		args = strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	switch {
	case len(args) == 2 && args[0] == "crash":
		crash(now, args[1])
	case len(args) == 3 && args[0] == "spew":
		n, err := strconv.ParseInt(args[1], 10, 64)
		if err != nil || n < LineSize {
			fail("spew: bad byte count " + args[1])
		}
		spew(now, n/LineSize, args[2])
	default:
		fail("usage: helper crash FILE | helper spew BYTES FILE")
	}
}

// crash records its start and, as late as it can, its exit, then exits 1.
func crash(start int64, file string) {
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fail(err.Error())
	}
	if _, err := f.WriteString("s " + strconv.FormatInt(start, 10) + "\n"); err != nil {
		fail(err.Error())
	}
	// One write per line: O_APPEND makes each one land whole.
	if _, err := f.WriteString("e " + strconv.FormatInt(realtime(), 10) + "\n"); err != nil {
		fail(err.Error())
	}
	os.Exit(1)
}

// spew writes lines "%010d xxx…\n" numbered from 0, 100 bytes each, in
// 64 KiB writes (a pipe's default capacity), records when the last write
// returned, and then waits to be stopped, so that a supervisor that
// restarts ended programs does not run it twice.
func spew(start, lines int64, file string) {
	const perWrite = 65536 / LineSize
	buf := make([]byte, 0, perWrite*LineSize)
	line := []byte(strings.Repeat("x", LineSize-1) + "\n")
	for i := int64(0); i < lines; {
		buf = buf[:0]
		for j := 0; j < perWrite && i < lines; j++ {
			buf = append(buf, line...)
			num := buf[len(buf)-LineSize:]
			digits := strconv.AppendInt(make([]byte, 0, 20), i, 10)
			for k := range 10 {
				num[k] = '0'
			}
			copy(num[10-len(digits):10], digits)
			num[10] = ' '
			i++
		}
		for b := buf; len(b) > 0; {
			n, err := unix.Write(1, b)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				fail("spew: " + err.Error())
			}
			b = b[n:]
		}
	}
	end := realtime()
	out := "start " + strconv.FormatInt(start, 10) + "\nend " + strconv.FormatInt(end, 10) + "\n"
	if err := os.WriteFile(file, []byte(out), 0o644); err != nil {
		fail(err.Error())
	}
	for {
		_ = unix.Pause() // until the supervisor's stop signal ends us
	}
}

func realtime() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_REALTIME, &ts)
	return ts.Nano()
}

func fail(msg string) {
	os.Stderr.WriteString("helper: " + msg + "\n")
	os.Exit(2)
}
