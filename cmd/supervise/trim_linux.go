package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// pagemapBlock is how many /proc/self/pagemap entries a release reads at
// a time: 8 KiB, 4 MiB of the binary a read, kept from the first release.
const pagemapBlock = 1024

// binaryPages gives back the pages of the binary's code and read-only
// data: once every program is up (what the start-up touched), and again
// each time the control socket has gone quiet (what serving requests
// mapped back). The first release finds the binary's mappings, which do
// not change while the process runs; the later ones each cost a few
// system calls and no allocation. An allocation could start a
// collection, and a collection arms the next release.
type binaryPages struct {
	mu      sync.Mutex
	found   bool
	ranges  []pageRange           // the binary's read-only mappings
	path    []byte                // "/proc/self/pagemap\x00", for openat
	entries *[pagemapBlock]uint64 // a block of the page map
}

// pageRange is a mapping's addresses, lo to hi.
type pageRange struct{ lo, hi uintptr }

func newBinaryPages() *binaryPages { return &binaryPages{} }

// releaseStartup gives back what supervise run's start-up left resident
// once every program is up: the heap's garbage (the config's decoding,
// the programs' start) goes back to the kernel, and the pages of the
// binary's code and read-only data are unmapped. Those are clean pages
// of the file: the next use maps them again from the page cache (a minor
// fault), so what stays resident is what the running supervisor touches,
// not the CLI, the config parser and every package's initialisation,
// which the kernel's fault-around had mapped 64 KiB at a time. Measured
// with 100 programs: the binary's part of the resident set went from
// about 10.7 MiB to about 2 MiB (bench/README.md). Writable mappings are
// left alone, and so are the private copies in a read-only one:
// MADV_DONTNEED there would throw data away.
func (b *binaryPages) releaseStartup() error {
	debug.FreeOSMemory()
	return b.release()
}

// release unmaps the binary's read-only pages: what serving requests
// mapped back, once they have stopped. Without a collection (at 1,000
// programs a forced one cost 20 ms of CPU and a hundred context switches
// of an otherwise idle supervisor; the heap a burst grew goes back
// through the runtime's own scavenger), and through raw system calls:
// one that enters the scheduler wakes the runtime's monitor thread,
// which then polls every 20 µs while the release holds the processor.
func (b *binaryPages) release() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.found {
		if err := b.find(); err != nil {
			return err
		}
	}
	cwd := unix.AT_FDCWD // a variable: the constant is negative
	fd, _, errno := unix.RawSyscall6(unix.SYS_OPENAT, uintptr(cwd), uintptr(unsafe.Pointer(&b.path[0])),
		unix.O_RDONLY|unix.O_CLOEXEC, 0, 0, 0)
	if errno != 0 {
		return fmt.Errorf("opening /proc/self/pagemap: %w", errno)
	}
	defer unix.RawSyscall(unix.SYS_CLOSE, fd, 0, 0)
	for _, r := range b.ranges {
		if err := releaseFilePages(int(fd), b.entries, r.lo, r.hi); err != nil {
			return err
		}
	}
	return nil
}

// find reads the binary's read-only mappings from /proc/self/maps.
func (b *binaryPages) find() error {
	var exe unix.Stat_t
	if err := unix.Stat("/proc/self/exe", &exe); err != nil {
		return fmt.Errorf("finding the binary: %w", err)
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return err
	}
	var ranges []pageRange
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		if lo, hi, ok := binaryMapping(sc.Text(), exe); ok {
			ranges = append(ranges, pageRange{lo, hi})
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading /proc/self/maps: %w", err)
	}
	b.ranges, b.path, b.entries, b.found = ranges, []byte("/proc/self/pagemap\x00"), new([pagemapBlock]uint64), true
	return nil
}

// Bits of a /proc/PID/pagemap entry.
const (
	pagePresent = 1 << 63
	pageSwapped = 1 << 62
	pageFile    = 1 << 61 // a page of a file (or shared anonymous memory)
)

// releaseFilePages unmaps the pages of lo-hi, a read-only private mapping
// of the binary, that are the file's own: a private copy (the dynamic
// loader's relocations of a position-independent build, made read-only
// afterwards) would be thrown away and the file's bytes read in its place,
// so the runs around those pages are unmapped and they are left alone.
// pagemap is /proc/self/pagemap, read a block of entries at a time; one
// MADV_DONTNEED covers each run of releasable pages.
func releaseFilePages(pagemap int, entries *[pagemapBlock]uint64, lo, hi uintptr) error {
	page := uintptr(os.Getpagesize())
	start := lo // the run of releasable pages that ends before addr
	for block := lo; block < hi; block += pagemapBlock * page {
		n := min((hi-block)/page, pagemapBlock)
		got, _, errno := unix.RawSyscall6(unix.SYS_PREAD64, uintptr(pagemap), uintptr(unsafe.Pointer(&entries[0])),
			n*8, block/page*8, 0, 0)
		if errno != 0 || got != n*8 {
			return fmt.Errorf("reading the page map of %#x-%#x: %d bytes of %d: %w", block, hi, got, n*8, errnoErr(errno))
		}
		for i, e := range entries[:n] {
			if e&pageSwapped != 0 || e&pagePresent != 0 && e&pageFile == 0 {
				addr := block + uintptr(i)*page
				if err := dontNeed(start, addr); err != nil {
					return err
				}
				start = addr + page
			}
		}
	}
	return dontNeed(start, hi)
}

// dontNeed unmaps lo-hi (nothing when it is empty).
func dontNeed(lo, hi uintptr) error {
	if hi <= lo {
		return nil
	}
	if _, _, errno := unix.RawSyscall(unix.SYS_MADVISE, lo, hi-lo, unix.MADV_DONTNEED); errno != 0 {
		return fmt.Errorf("madvise %#x-%#x: %w", lo, hi, errno)
	}
	return nil
}

// errnoErr is errno as an error, or a short read's.
func errnoErr(errno unix.Errno) error {
	if errno != 0 {
		return errno
	}
	return fmt.Errorf("short read")
}

// binaryMapping parses a line of /proc/self/maps and says whether it maps
// the binary exe read-only (its code or read-only data), and where.
func binaryMapping(line string, exe unix.Stat_t) (lo, hi uintptr, ok bool) {
	f := strings.Fields(line) // address perms offset dev inode path
	if len(f) < 6 || len(f[1]) < 2 || f[1][0] != 'r' || f[1][1] != '-' {
		return 0, 0, false
	}
	inode, err := strconv.ParseUint(f[4], 10, 64)
	if err != nil || inode != exe.Ino {
		return 0, 0, false
	}
	major, minor, ok := strings.Cut(f[3], ":")
	maj, err1 := strconv.ParseUint(major, 16, 32)
	min, err2 := strconv.ParseUint(minor, 16, 32)
	if !ok || err1 != nil || err2 != nil || unix.Mkdev(uint32(maj), uint32(min)) != exe.Dev {
		return 0, 0, false
	}
	a, b, ok := strings.Cut(f[0], "-")
	start, err1 := strconv.ParseUint(a, 16, 64)
	end, err2 := strconv.ParseUint(b, 16, 64)
	if !ok || err1 != nil || err2 != nil || end <= start {
		return 0, 0, false
	}
	return uintptr(start), uintptr(end), true
}

// fdTimer is the idle release's timer, on a timerfd that the runtime's
// poller waits for. A runtime timer also wakes the runtime's monitor
// thread at its deadline, which then polls every 20 µs until another
// thread has run the timer; that thread waits in epoll_wait, which the
// kernel lets end late by a thousandth of its timeout (about 4 ms of a
// 5 s wait, traced): 15 to 45 context switches at each release. The
// timerfd's expiry wakes only the thread blocked in epoll, at once, and
// that thread runs the release itself.
type fdTimer struct {
	file *os.File
	done chan struct{} // closed as wait returns
}

// afterQuiet calls f once d has passed (d <= 0: not before a Reset), and
// again d after each Reset, until Stop. It falls back on a runtime timer
// when no timerfd can be had.
func afterQuiet(d time.Duration, f func()) resetter {
	t, err := newFDTimer(d, f)
	if err != nil {
		return stoppedUnless(time.AfterFunc(max(d, time.Hour), f), d)
	}
	return t
}

func newFDTimer(d time.Duration, f func()) (*fdTimer, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("creating a timerfd: %w", err)
	}
	file := os.NewFile(uintptr(fd), "timerfd")
	rc, err := file.SyscallConn()
	if err != nil {
		file.Close()
		return nil, err
	}
	t := &fdTimer{file: file, done: make(chan struct{})}
	if d > 0 {
		t.Reset(d)
	}
	go t.wait(rc, f)
	return t, nil
}

// wait calls f at each expiry until the file is closed. Its reads are raw
// system calls, which leave the monitor thread asleep.
func (t *fdTimer) wait(rc syscall.RawConn, f func()) {
	defer close(t.done)
	var count uint64 // expiries since the last read
	fired := false
	read := func(fd uintptr) bool {
		_, _, errno := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&count)), 8)
		fired = errno == 0
		return errno != unix.EAGAIN
	}
	for {
		if err := rc.Read(read); err != nil {
			return // closed by Stop
		}
		if fired {
			f()
		}
	}
}

// Reset arms the timer to expire d from now, replacing a pending expiry.
// It always reports false: timerfd does not say, and idleTrim does not ask.
func (t *fdTimer) Reset(d time.Duration) bool {
	its := unix.ItimerSpec{Value: unix.NsecToTimespec(max(d.Nanoseconds(), 1))}
	_ = t.control(func(fd uintptr) { _ = unix.TimerfdSettime(int(fd), 0, &its, nil) })
	return false
}

// Stop ends the timer for good, unlike a runtime timer's (idleTrim stops
// it only as it stops too), and waits until a running f has returned.
func (t *fdTimer) Stop() bool {
	err := t.file.Close()
	<-t.done
	return err == nil
}

func (t *fdTimer) control(f func(fd uintptr)) error {
	rc, err := t.file.SyscallConn()
	if err != nil {
		return err
	}
	return rc.Control(f)
}
