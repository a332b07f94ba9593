package soak

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// meter samples the supervisor's RSS and threads twice a second for the
// whole run and keeps the peak of each phase. RSS is compared peak to
// peak: a sample at one quiet moment says little of a Go process, whose
// heap runs to twice its live data between collections and whose freed
// pages go back to the OS minutes later; the peak under the same chaos is
// what a leak raises.
type meter struct {
	pid       int
	phase     atomic.Int32
	stop      chan struct{}
	closeOnce sync.Once
	done      chan struct{}

	mu     sync.Mutex
	peak   [phases]sample
	begin  time.Time
	series []point // every seriesEvery, for the report
}

// point is one sample of the series.
type point struct {
	at                   time.Duration // since the supervisor started
	rssKiB, threads, fds int
}

const seriesEvery = 30 * time.Second

const (
	phaseStart = iota // the first start of the 200 programs
	phaseWarm         // the warm-up chaos, up to the first measurement
	phaseMain         // the rest of the chaos and the end checks
	phases
)

func startMeter(pid int) *meter {
	m := &meter{pid: pid, stop: make(chan struct{}), done: make(chan struct{}), begin: time.Now()}
	go func() {
		defer close(m.done)
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			m.take()
			select {
			case <-m.stop:
				return
			case <-t.C:
			}
		}
	}()
	return m
}

func (m *meter) take() {
	rss, threads := statusField(m.pid, "VmRSS"), statusField(m.pid, "Threads")
	if rss < 0 {
		return // gone
	}
	p := m.phase.Load()
	m.mu.Lock()
	defer m.mu.Unlock()
	pk := &m.peak[p]
	pk.rssKiB = max(pk.rssKiB, rss)
	pk.threads = max(pk.threads, threads)
	at := time.Since(m.begin)
	if n := len(m.series); n == 0 || at-m.series[n-1].at >= seriesEvery {
		fds, _, _ := fdKinds(m.pid)
		m.series = append(m.series, point{at: at, rssKiB: rss, threads: threads, fds: fds})
	}
}

// enter starts phase p; the samples from now on count for it.
func (m *meter) enter(p int) {
	m.take() // the end of the last phase
	m.phase.Store(int32(p))
}

// close stops the sampling and returns the peaks and the series. It may
// be called again (the test's cleanup does).
func (m *meter) close() ([phases]sample, []point) {
	m.closeOnce.Do(func() { close(m.stop) })
	<-m.done
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.peak, m.series
}

// seriesText renders the series as "t rss/fds/threads" steps.
func seriesText(ps []point) string {
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%v %.1f/%d/%d", p.at.Round(time.Second), float64(p.rssKiB)/1024, p.fds, p.threads)
	}
	return b.String()
}
