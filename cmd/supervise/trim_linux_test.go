package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rssFile is the resident file-backed memory of this process, in KiB.
func rssFile(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "RssFile:"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}

// The binary's pages the start-up left mapped are unmapped: this test
// binary's own resident file pages fall by most of its code.
func TestReleaseStartupMemoryUnmapsTheBinarysPages(t *testing.T) {
	before := rssFile(t)
	if err := newBinaryPages().releaseStartup(); err != nil {
		t.Fatal(err)
	}
	after := rssFile(t)
	t.Logf("resident file pages: %d KiB before, %d KiB after", before, after)
	if after > before/2 {
		t.Errorf("resident file pages: %d KiB before, %d KiB after; want less than half", before, after)
	}
}

func TestBinaryMapping(t *testing.T) {
	exe := unix.Stat_t{Ino: 10033443, Dev: unix.Mkdev(0xfe, 0)}
	for _, c := range []struct {
		line   string
		lo, hi uintptr
		ok     bool
	}{
		{"00400000-009d8000 r-xp 00000000 fe:00 10033443   /usr/local/bin/supervise", 0x400000, 0x9d8000, true},
		{"009d8000-01047000 r--p 005d8000 fe:00 10033443   /usr/local/bin/supervise (deleted)", 0x9d8000, 0x1047000, true},
		{"01047000-010af000 rw-p 00c47000 fe:00 10033443   /usr/local/bin/supervise", 0, 0, false}, // writable: data
		{"00400000-009d8000 r-xp 00000000 fe:01 10033443   /other/disk", 0, 0, false},              // another device
		{"00400000-009d8000 r-xp 00000000 fe:00 10033444   /usr/local/bin/other", 0, 0, false},     // another file
		{"010af000-030f3000 rw-p 00000000 00:00 0 ", 0, 0, false},
		{"7ffd1000-7ffd3000 r-xp 00000000 00:00 0   [vdso]", 0, 0, false},
		{"garbage", 0, 0, false},
		{"9d8000-400000 r--p 0 fe:00 10033443 x", 0, 0, false}, // end before start
	} {
		lo, hi, ok := binaryMapping(c.line, exe)
		if lo != c.lo || hi != c.hi || ok != c.ok {
			t.Errorf("%q: %#x-%#x %v, want %#x-%#x %v", c.line, lo, hi, ok, c.lo, c.hi, c.ok)
		}
	}
}

// A page of a private file mapping that was written (as the dynamic
// loader relocates a position-independent binary's data before making it
// read-only) is a copy: releasing it would bring the file's bytes back.
// The file's own pages around it are released.
func TestReleaseFilePagesKeepsPrivateCopies(t *testing.T) {
	page := os.Getpagesize()
	f, err := os.CreateTemp(t.TempDir(), "mapped")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(bytes.Repeat([]byte{'f'}, 4*page)); err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, 4*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	m[page] = 'c' // page 1 becomes a private copy
	if err := unix.Mprotect(m, unix.PROT_READ); err != nil {
		t.Fatal(err)
	}
	_ = m[0] + m[2*page] + m[3*page] // pages 0, 2 and 3 mapped from the file
	pagemap := openPagemap(t)
	lo := uintptr(unsafe.Pointer(&m[0]))
	if err := releaseFilePages(int(pagemap.Fd()), new([pagemapBlock]uint64), lo, lo+uintptr(4*page)); err != nil {
		t.Fatal(err)
	}
	if m[page] != 'c' {
		t.Fatalf("the private copy reads %q after the release, want 'c'", m[page])
	}
	present := mappedPages(t, pagemap, lo, 4, page)
	if present != "0100" {
		t.Errorf("pages present after the release: %s, want 0100 (only the copy)", present)
	}
}

// The page map is read a block at a time: copies on either side of a
// block's edge are kept, and the runs between them, across the edge,
// released.
func TestReleaseFilePagesAcrossBlocks(t *testing.T) {
	page := os.Getpagesize()
	n := 2*pagemapBlock + 3
	f, err := os.CreateTemp(t.TempDir(), "mapped")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(int64(n * page)); err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, n*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	copies := []int{0, pagemapBlock - 1, pagemapBlock, pagemapBlock + 2, n - 1}
	for _, c := range copies {
		m[c*page] = 'c'
	}
	if err := unix.Mprotect(m, unix.PROT_READ); err != nil {
		t.Fatal(err)
	}
	want := bytes.Repeat([]byte{'0'}, n)
	for _, c := range copies {
		want[c] = '1'
	}
	for i := range n { // every page mapped, from the file or a copy
		if b := m[i*page]; b != 0 && b != 'c' {
			t.Fatalf("page %d reads %q", i, b)
		}
	}
	pagemap := openPagemap(t)
	lo := uintptr(unsafe.Pointer(&m[0]))
	if err := releaseFilePages(int(pagemap.Fd()), new([pagemapBlock]uint64), lo, lo+uintptr(n*page)); err != nil {
		t.Fatal(err)
	}
	for _, c := range copies {
		if m[c*page] != 'c' {
			t.Fatalf("the private copy at page %d reads %q after the release, want 'c'", c, m[c*page])
		}
	}
	if present := mappedPages(t, pagemap, lo, n, page); present != string(want) {
		t.Errorf("pages present after the release:\n%s\nwant (only the copies):\n%s", present, want)
	}
}

func openPagemap(t *testing.T) *os.File {
	t.Helper()
	pagemap, err := os.Open("/proc/self/pagemap")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pagemap.Close() })
	return pagemap
}

// mappedPages says, page by page, which of n pages from lo are mapped.
func mappedPages(t *testing.T, pagemap *os.File, lo uintptr, n, page int) string {
	t.Helper()
	buf := make([]byte, 8*n)
	if _, err := pagemap.ReadAt(buf, int64(lo/uintptr(page)*8)); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i := range n {
		if binary.LittleEndian.Uint64(buf[8*i:])&pagePresent != 0 {
			b.WriteByte('1')
		} else {
			b.WriteByte('0')
		}
	}
	return b.String()
}

// The idle release allocates nothing: an allocation can start a
// collection, and a collection arms the next release.
func TestReleaseBinaryPagesAllocatesNothing(t *testing.T) {
	pages := newBinaryPages()
	if err := pages.release(); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(10, func() {
		if err := pages.release(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("a release after the first allocated %v times, want none", allocs)
	}
}

// The idle release's timer fires once its delay has passed, again after
// a Reset, and Stop ends its goroutine even while it is armed.
func TestFDTimer(t *testing.T) {
	fired := make(chan struct{}, 10)
	tm, err := newFDTimer(time.Millisecond, func() { fired <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	waitFired := func(what string) {
		t.Helper()
		select {
		case <-fired:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: not fired in 30 s", what)
		}
	}
	waitFired("armed for 1 ms")
	tm.Reset(time.Millisecond)
	waitFired("reset for 1 ms")
	tm.Reset(time.Hour)
	stopped := make(chan struct{})
	go func() { tm.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(30 * time.Second):
		t.Fatal("Stop of a timer armed for an hour did not return in 30 s")
	}
	if len(fired) != 0 {
		t.Errorf("fired %d more times", len(fired))
	}
}
