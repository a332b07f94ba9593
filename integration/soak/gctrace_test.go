package soak

import (
	"bufio"
	"os"
	"regexp"
	"strconv"
	"time"
)

// The supervisor runs with GODEBUG=gctrace=1: every collection prints a
// line to its stderr (supervise.log) with the heap it left live. That is
// the precise signal of a leak: RSS also carries the garbage between two
// collections (up to as much again as the live heap, GOGC=100) and free
// pages the runtime has not returned yet, while the live heap after a
// collection is only what is still referenced.

// gcLine matches "gc 12 @25.827s 0%: … 64->65->35 MB, 68 MB goal, 1 MB
// stacks, …": the stacks figure is the goroutine stacks the collector
// scanned, what the control API does not give: the goroutines.
var gcLine = regexp.MustCompile(`^gc \d+ @([0-9.]+)s .* (\d+)->(\d+)->(\d+) MB, (\d+) MB goal, (\d+) MB stacks`)

// gcSample is one collection: when (since the supervisor started) and the
// heap it left live.
type gcSample struct {
	at                 time.Duration
	liveMiB, stacksMiB int
}

// readGCTrace reads the collections from the supervisor's log.
func readGCTrace(logPath string) []gcSample {
	f, err := os.Open(logPath)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []gcSample
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := gcLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		secs, err1 := strconv.ParseFloat(m[1], 64)
		live, err2 := strconv.Atoi(m[4])
		stacks, err3 := strconv.Atoi(m[6])
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		out = append(out, gcSample{at: time.Duration(secs * float64(time.Second)), liveMiB: live, stacksMiB: stacks})
	}
	return out
}

// maxLive is the largest live heap and goroutine stacks seen by a
// collection in [from, to), and how many collections there were.
func maxLive(gcs []gcSample, from, to time.Duration) (live, stacks, n int) {
	for _, g := range gcs {
		if g.at >= from && g.at < to {
			live = max(live, g.liveMiB)
			stacks = max(stacks, g.stacksMiB)
			n++
		}
	}
	return live, stacks, n
}
