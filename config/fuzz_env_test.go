package config

import (
	"errors"
	"flag"
	"runtime"
	"strings"
	"testing"
	"time"
)

// FuzzEnvExpand drives the .env parser and its expander: whatever the
// bytes, every value stays within maxValueSize and holds no NUL, the set
// within maxEnvSize, every error names a line of the file and the TOML
// expander agrees on the bound. When fuzzing (not when the seeds run as a
// unit test, where the machine's speed must not matter), one input may take
// at most 1 s and allocate at most 100 MiB.
func FuzzEnvExpand(f *testing.F) {
	f.Add(envBomb(22))
	f.Add("A=${B:-${C:-${D:-x}}}\nE=${A:+y}${A-z}\nF=\"${A:?need A}\\n$A\"\n")
	f.Add("A='lit $A'\nB=${BIG}${BIG}\nC=$$\\$x\nD=${A\n")
	f.Add("A=" + strings.Repeat("${U:-", 20) + "x" + strings.Repeat("}", 20) + "\n")
	f.Add("X=\"multi\nline ${BIG}\"\nY=${X}${X}${X}\n")
	big := strings.Repeat("b", 50<<10)
	outer := func(name string) (string, bool) {
		switch name {
		case "BIG":
			return big, true
		case "EMPTY":
			return "", true
		}
		return "", false
	}
	fuzzing := flag.Lookup("test.fuzz").Value.String() != ""
	f.Fuzz(func(t *testing.T, src string) {
		var before runtime.MemStats
		if fuzzing {
			runtime.ReadMemStats(&before)
		}
		start := time.Now()
		vars, err := parseEnv(".env", src, outer)
		elapsed := time.Since(start)
		if fuzzing {
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 100<<20 {
				t.Fatalf("allocated %d MiB for a %d-byte input", alloc>>20, len(src))
			}
			if elapsed > time.Second {
				t.Fatalf("took %v for a %d-byte input", elapsed, len(src))
			}
		}
		lines := strings.Count(strings.ReplaceAll(src, "\r\n", "\n"), "\n") + 1
		if err != nil {
			var list ErrorList
			if !errors.As(err, &list) || len(list) == 0 || vars != nil {
				t.Fatalf("not a non-empty ErrorList: %T %v", err, err)
			}
			for _, e := range list {
				if e.Line < 1 || e.Line > lines+1 || e.Msg == "" {
					t.Fatalf("bad error %#v", e)
				}
			}
			return
		}
		size := 0
		for k, v := range vars {
			if !envNameRE().MatchString(k) || len(v) > maxValueSize || strings.IndexByte(v, 0) >= 0 {
				t.Fatalf("bad variable %q (%d bytes)", k, len(v))
			}
			size += envCost(k, v)
			// The TOML expander reads the same references and is held
			// to the same bound.
			if got, err := expandEnv(v, outer); err == nil && len(got) > maxValueSize {
				t.Fatalf("TOML expansion of %q: %d bytes", k, len(got))
			}
		}
		if size > maxEnvSize {
			t.Fatalf("environment of %d bytes", size)
		}
	})
}
