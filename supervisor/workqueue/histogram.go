package workqueue

import "time"

// HistogramBounds are the upper bounds of the latency histograms' buckets:
// 10 ns to 10 s by powers of ten, the buckets client-go's workqueue metrics
// use, so dashboards made for those read these.
var HistogramBounds = [...]time.Duration{
	10 * time.Nanosecond, 100 * time.Nanosecond, time.Microsecond, 10 * time.Microsecond,
	100 * time.Microsecond, time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond,
	time.Second, 10 * time.Second,
}

// Histogram counts observed durations in the buckets of HistogramBounds.
type Histogram struct {
	// Buckets[i] counts observations ≤ HistogramBounds[i] and above the
	// bound before (not cumulative); the last counts those above every
	// bound.
	Buckets [len(HistogramBounds) + 1]uint64
	Count   uint64
	Sum     time.Duration
}

// observe adds d. Ten comparisons at most: cheaper than a logarithm.
func (h *Histogram) observe(d time.Duration) {
	i := 0
	for i < len(HistogramBounds) && d > HistogramBounds[i] {
		i++
	}
	h.Buckets[i]++
	h.Count++
	h.Sum += d
}
