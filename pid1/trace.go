package pid1

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

// An init's start-up is its container's. SUPERVISE_INIT_TRACE makes Run
// print on stderr when each stage of its start ended, for benchmarks:
// "init-trace STAGE MS" per line, MS counted from the CLOCK_REALTIME
// nanoseconds the variable holds (the caller's time just before it started
// us, so that the exec and the Go runtime's start-up are counted), or from
// this package's initialisation when it holds anything else.
var trace = newStageTrace(os.Getenv("SUPERVISE_INIT_TRACE"))

type stageTrace struct {
	on bool
	t0 time.Time
}

func newStageTrace(v string) stageTrace {
	if v == "" {
		return stageTrace{}
	}
	t := stageTrace{on: true, t0: time.Now()}
	if ns, err := strconv.ParseInt(v, 10, 64); err == nil && ns > 1 {
		t.t0 = time.Unix(0, ns)
	}
	return t
}

func (t stageTrace) mark(stage string) {
	if t.on {
		fmt.Fprintf(os.Stderr, "init-trace %s %.3f\n", stage, float64(time.Since(t.t0).Nanoseconds())/1e6)
	}
}
