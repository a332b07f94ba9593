package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// releaseStartupMemory gives back what supervise run's start-up left
// resident once every program is up: the heap's garbage (the config's
// decoding, the programs' start) goes back to the kernel, and the pages
// of the binary's code and read-only data are unmapped. Those are clean
// pages of the file: the next use maps them again from the page cache
// (a minor fault), so what stays resident is what the running supervisor
// touches, not the CLI, the config parser and every package's
// initialisation, which the kernel's fault-around had mapped 64 KiB at a
// time. Measured with 100 programs: the binary's part of the resident
// set went from about 10.7 MiB to about 2 MiB (bench/README.md).
// Writable mappings are left alone, and so are the private copies in a
// read-only one: MADV_DONTNEED there would throw data away.
func releaseStartupMemory() error {
	debug.FreeOSMemory()
	return releaseBinaryPages()
}

// releaseBinaryPages unmaps the binary's read-only pages: what serving
// requests mapped back, once they have stopped. Without a collection: at
// 1,000 programs a forced one cost 20 ms of CPU and a hundred context
// switches of an otherwise idle supervisor; the heap a burst grew goes
// back through the runtime's own scavenger.
func releaseBinaryPages() error {
	var exe unix.Stat_t
	if err := unix.Stat("/proc/self/exe", &exe); err != nil {
		return fmt.Errorf("finding the binary: %w", err)
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return err
	}
	pagemap, err := os.Open("/proc/self/pagemap")
	if err != nil {
		return err
	}
	defer pagemap.Close()
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		lo, hi, ok := binaryMapping(sc.Text(), exe)
		if !ok {
			continue
		}
		if err := releaseFilePages(pagemap, lo, hi); err != nil {
			return err
		}
	}
	return sc.Err()
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
func releaseFilePages(pagemap *os.File, lo, hi uintptr) error {
	page := uintptr(os.Getpagesize())
	entries := make([]byte, (hi-lo)/page*8)
	if _, err := pagemap.ReadAt(entries, int64(lo/page*8)); err != nil {
		return fmt.Errorf("reading the page map of %#x-%#x: %w", lo, hi, err)
	}
	start := lo // the run of releasable pages that ends before addr
	for i := uintptr(0); ; i++ {
		addr := lo + i*page
		copied := false
		if addr < hi {
			e := binary.LittleEndian.Uint64(entries[i*8:])
			copied = e&pageSwapped != 0 || e&pagePresent != 0 && e&pageFile == 0
		}
		if addr < hi && !copied {
			continue
		}
		if addr > start {
			if _, _, errno := unix.Syscall(unix.SYS_MADVISE, start, addr-start, unix.MADV_DONTNEED); errno != 0 {
				return fmt.Errorf("madvise %#x-%#x: %w", start, addr, errno)
			}
		}
		if addr >= hi {
			return nil
		}
		start = addr + page
	}
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
