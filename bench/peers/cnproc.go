//go:build linux

package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// The kernel's process events connector (linux/cn_proc.h): every exec on
// the machine, with the kernel's CLOCK_MONOTONIC timestamp, pushed to us,
// so "all programs run" is known to the microsecond without polling /proc
// while a thousand processes start. Needs root and CONFIG_PROC_EVENTS.
const (
	cnIdxProc         = 1
	cnValProc         = 1
	procCnMcastListen = 1
	procCnMcastIgnore = 2
	procEventExec     = 0x00000002
	nlmsgHdrLen       = 16
	cnMsgLen          = 20
)

// execWatch counts the distinct pids that exec'd one of the benchmark's
// programs, and when the last of them did.
type execWatch struct {
	fd     int
	marker string
	stop   chan struct{}
	wg     sync.WaitGroup

	mu   sync.Mutex
	seen map[int]int64 // guarded by mu: pid → latest exec timestamp (monotonic ns)
	lost bool          // guarded by mu: the socket overflowed, events were dropped
	err  error         // guarded by mu
}

// watchExecs subscribes to exec events; Close stops it.
func watchExecs(marker string) (*execWatch, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_CONNECTOR)
	if err != nil {
		return nil, fmt.Errorf("proc connector socket: %w", err)
	}
	// A thousand execs in a burst must not overflow the queue.
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 32<<20)
	// The reader wakes every 100 ms to see whether it should stop.
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Usec: 100_000})
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: cnIdxProc}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("proc connector bind: %w", err)
	}
	if err := sendMcast(fd, procCnMcastListen); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("proc connector listen: %w", err)
	}
	w := &execWatch{fd: fd, marker: marker, stop: make(chan struct{}), seen: map[int]int64{}}
	w.wg.Go(w.read)
	return w, nil
}

func sendMcast(fd int, op uint32) error {
	b := make([]byte, nlmsgHdrLen+cnMsgLen+4)
	le := binary.LittleEndian // the host's order; amd64 and arm64 are little-endian
	le.PutUint32(b[0:], uint32(len(b)))
	le.PutUint16(b[4:], unix.NLMSG_DONE)
	le.PutUint32(b[12:], uint32(unix.Getpid()))
	le.PutUint32(b[16:], cnIdxProc)
	le.PutUint32(b[20:], cnValProc)
	le.PutUint16(b[32:], 4)
	le.PutUint32(b[36:], op)
	return unix.Sendto(fd, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
}

func (w *execWatch) read() {
	buf := make([]byte, 1<<16)
	le := binary.LittleEndian
	for {
		select {
		case <-w.stop:
			return
		default:
		}
		n, _, err := unix.Recvfrom(w.fd, buf, 0)
		switch {
		case errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ENOBUFS):
			w.mu.Lock()
			w.lost = true
			w.mu.Unlock()
			continue
		case err != nil:
			w.mu.Lock()
			w.err = err
			w.mu.Unlock()
			return
		}
		for b := buf[:n]; len(b) >= nlmsgHdrLen; {
			l := int(le.Uint32(b))
			if l < nlmsgHdrLen || l > len(b) {
				break
			}
			w.event(b[nlmsgHdrLen:l])
			b = b[(l+3)&^3:]
		}
	}
}

// event handles one cn_msg carrying a proc_event.
func (w *execWatch) event(m []byte) {
	le := binary.LittleEndian
	if len(m) < cnMsgLen+24 || le.Uint32(m[0:]) != cnIdxProc {
		return
	}
	ev := m[cnMsgLen:]
	if le.Uint32(ev[0:]) != procEventExec {
		return
	}
	ts := int64(le.Uint64(ev[8:]))
	pid := int(le.Uint32(ev[20:])) // process_tgid: the process, not the thread
	// Every exec of the machine comes here; only ours carry the marker.
	// A shell that has since exec'd sleep matches too: keeping the latest
	// timestamp per pid makes its own sleep exec the one that counts.
	if !isProgram(pid, w.marker) {
		return
	}
	w.mu.Lock()
	if ts > w.seen[pid] {
		w.seen[pid] = ts
	}
	w.mu.Unlock()
}

// count returns how many distinct programs exec'd, the latest exec time,
// and whether events were lost.
func (w *execWatch) count() (n int, last time.Duration, lost bool, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, ts := range w.seen {
		last = max(last, time.Duration(ts))
	}
	return len(w.seen), last, w.lost, w.err
}

// times returns every program's exec time, sorted.
func (w *execWatch) times() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]time.Duration, 0, len(w.seen))
	for _, ts := range w.seen {
		out = append(out, time.Duration(ts))
	}
	slices.Sort(out)
	return out
}

func (w *execWatch) Close() {
	close(w.stop)
	w.wg.Wait()
	_ = sendMcast(w.fd, procCnMcastIgnore)
	unix.Close(w.fd)
}

func monotonic() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return time.Duration(ts.Nano())
}

func realtime() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_REALTIME, &ts)
	return ts.Nano()
}
