package metrics

import (
	"runtime"
	"runtime/metrics"
)

// appendGo writes the Go runtime's figures under the names of the Go
// collector that Prometheus users know.
func appendGo(e *encoder) {
	samples := []metrics.Sample{
		{Name: "/sched/goroutines:goroutines"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/total:bytes"},
		{Name: "/gc/cycles/total:gc-cycles"},
		{Name: "/sched/gomaxprocs:threads"},
	}
	metrics.Read(samples)
	val := func(i int) float64 {
		switch samples[i].Value.Kind() {
		case metrics.KindUint64:
			return float64(samples[i].Value.Uint64())
		case metrics.KindFloat64:
			return samples[i].Value.Float64()
		}
		return 0
	}
	e.family("go_info", "gauge", "Always 1; the label is the Go version supervise was built with.")
	e.sample("go_info", 1, "version", runtime.Version())
	e.family("go_goroutines", "gauge", "Goroutines of the supervisor.")
	e.sample("go_goroutines", val(0))
	e.family("go_memstats_heap_alloc_bytes", "gauge", "Bytes of heap objects of the supervisor, live or not yet swept.")
	e.sample("go_memstats_heap_alloc_bytes", val(1))
	e.family("go_memstats_sys_bytes", "gauge", "Bytes of memory the Go runtime of the supervisor got from the system.")
	e.sample("go_memstats_sys_bytes", val(2))
	e.family("go_gc_cycles_total", "counter", "Garbage collections the supervisor completed.")
	e.sample("go_gc_cycles_total", val(3))
	e.family("go_sched_gomaxprocs_threads", "gauge", "GOMAXPROCS of the supervisor.")
	e.sample("go_sched_gomaxprocs_threads", val(4))
}
