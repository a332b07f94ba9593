//go:build linux

// Command forkcost measures what the size of a parent's descriptor table
// costs each fork and exec, and what starting the program from a small
// helper process (a spawner that gets the program's descriptors by
// SCM_RIGHTS and forks it with CLONE_PARENT, so it is still our child)
// saves. It holds K pipes (2K descriptors, close-on-exec, as supervise
// holds its programs' pipes), starts /bin/true R times each way, and
// prints the time per start.
//
//	forkcost -k 1000,9000 -r 500
package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "spawner" {
		os.Exit(spawner())
	}
	ks := flag.String("k", "1000,9000", "pipes held (comma-separated sizes)")
	runs := flag.Int("r", 500, "starts per way and size")
	flag.Parse()
	null, err := os.Open(os.DevNull)
	check(err)
	var held []int
	for _, ks := range strings.Split(*ks, ",") {
		k, err := strconv.Atoi(ks)
		check(err)
		for len(held) < 2*k {
			var p [2]int
			check(unix.Pipe2(p[:], unix.O_CLOEXEC))
			held = append(held, p[0], p[1])
		}
		// Interleaved rounds, so that a change of the machine's load
		// touches both ways alike; CPU time (ours and our children's,
		// the spawner's included) is what the table costs.
		var dw, dc, sw, sc float64
		const rounds = 5
		for range rounds {
			w, c := measure(*runs/rounds, func() int {
				pid, err := syscall.ForkExec("/bin/true", []string{"true"}, &syscall.ProcAttr{Files: []uintptr{null.Fd(), null.Fd(), null.Fd()}})
				check(err)
				return pid
			}, nil)
			dw, dc = dw+w/rounds, dc+c/rounds
			var sp *spawnerProc
			w, c = measure(*runs/rounds, func() int { return sp.spawn(int(null.Fd())) }, func(start bool) {
				if start {
					sp = startSpawner(null)
				} else {
					sp.close()
				}
			})
			sw, sc = sw+w/rounds, sc+c/rounds
		}
		load, _ := os.ReadFile("/proc/loadavg")
		fmt.Printf("K=%d pipes (%d descriptors): from the daemon %.0f µs wall, %.0f µs CPU per start; through a spawner %.0f µs wall, %.0f µs CPU; load %s",
			k, len(held)+4, dw, dc, sw, sc, load)
	}
}

// measure starts r programs one after the other, waiting for each, and
// returns the mean wall and CPU (user+system, ours and our reaped
// children's) µs per start. setup, when set, runs (true) before the
// clocks start and (false) before they stop, so that its process is
// reaped and counted.
func measure(r int, start func() int, setup func(start bool)) (wall, cpu float64) {
	c0 := cpuNow()
	t0 := time.Now()
	if setup != nil {
		setup(true)
	}
	for range r {
		pid := start()
		var ws unix.WaitStatus
		for {
			_, err := unix.Wait4(pid, &ws, 0, nil)
			if err != unix.EINTR {
				check(err)
				break
			}
		}
	}
	if setup != nil {
		setup(false)
	}
	wall = float64(time.Since(t0).Microseconds()) / float64(r)
	return wall, float64(cpuNow()-c0) / 1e3 / float64(r)
}

// cpuNow is the user+system time of this process and its reaped
// children, in ns.
func cpuNow() int64 {
	var t int64
	for _, who := range []int{unix.RUSAGE_SELF, unix.RUSAGE_CHILDREN} {
		var ru unix.Rusage
		check(unix.Getrusage(who, &ru))
		t += ru.Utime.Nano() + ru.Stime.Nano()
	}
	return t
}

type spawnerProc struct {
	conn int
	pid  int
}

// startSpawner forks this binary as the spawner with only the socket.
func startSpawner(null *os.File) *spawnerProc {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	check(err)
	self, err := os.Executable()
	check(err)
	pid, err := syscall.ForkExec(self, []string{"forkcost", "spawner"}, &syscall.ProcAttr{Files: []uintptr{null.Fd(), null.Fd(), 2, uintptr(fds[1])}})
	check(err)
	unix.Close(fds[1])
	return &spawnerProc{conn: fds[0], pid: pid}
}

// spawn sends the program's stdio (one descriptor here) and reads its pid.
func (s *spawnerProc) spawn(stdio int) int {
	check(unix.Sendmsg(s.conn, []byte{1}, unix.UnixRights(stdio), nil, 0))
	var b [8]byte
	n, err := unix.Read(s.conn, b[:])
	check(err)
	if n != 8 {
		panic("short reply")
	}
	return int(int64(binary.LittleEndian.Uint64(b[:])))
}

func (s *spawnerProc) close() {
	unix.Close(s.conn)
	var ws unix.WaitStatus
	_, _ = unix.Wait4(s.pid, &ws, 0, nil)
}

// spawner: for each request, fork /bin/true with the descriptor received
// as its stdio, as a sibling (CLONE_PARENT: the daemon's child), and
// reply with its pid.
func spawner() int {
	conn := 3
	for {
		buf := make([]byte, 1)
		oob := make([]byte, unix.CmsgSpace(4))
		n, oobn, _, _, err := unix.Recvmsg(conn, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err != nil || n == 0 {
			return 0
		}
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		check(err)
		fds, err := unix.ParseUnixRights(&msgs[0])
		check(err)
		fd := uintptr(fds[0])
		pid, err := syscall.ForkExec("/bin/true", []string{"true"}, &syscall.ProcAttr{
			Files: []uintptr{fd, fd, fd},
			Sys:   &syscall.SysProcAttr{Cloneflags: unix.CLONE_PARENT},
		})
		check(err)
		unix.Close(fds[0])
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(pid))
		_, err = unix.Write(conn, b[:])
		check(err)
	}
}

func check(err error) {
	if err != nil {
		panic(err)
	}
}
