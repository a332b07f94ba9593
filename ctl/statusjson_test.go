package ctl

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"testing"
	"time"
)

// fillAll sets every field of v (recursively, through pointers) to a
// non-zero value, so a field added to ProgramStatus without teaching
// appendStatusJSON about it shows up as a difference.
func fillAll(v reflect.Value, seed int) {
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillAll(v.Elem(), seed)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Date(2026, 11, 22, 10, 0, seed, 123456789, time.UTC)))
			return
		}
		for i := range v.NumField() {
			fillAll(v.Field(i), seed+i)
		}
	case reflect.Map: // two entries, so key order matters
		m := reflect.MakeMap(v.Type())
		for i := range 2 {
			k := reflect.New(v.Type().Key()).Elem()
			e := reflect.New(v.Type().Elem()).Elem()
			fillAll(k, seed+7-i)
			fillAll(e, seed+i)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.String:
		v.SetString("s" + string(rune('a'+seed%26)))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(seed + 1))
	case reflect.Float64:
		v.SetFloat(float64(seed) + 0.5)
	default:
		panic("fillAll: add " + v.Kind().String())
	}
}

func TestStatusJSONMatchesEncodingJSON(t *testing.T) {
	var full ProgramStatus
	fillAll(reflect.ValueOf(&full).Elem(), 3)
	no := false
	loc := time.FixedZone("X", 5*3600+1800)
	cases := map[string][]ProgramStatus{
		"empty":  {},
		"zero":   {{}},
		"full":   {full, full},
		"probes": {{Probes: map[string]ProbeResult{"readiness": {Message: "HTTP 503"}, "liveness": {OK: true}, "startup": {}}}},
		"escape": {{Name: "a\"b\\c\n\t\r\b\f\x01\x1f<>&\u2028\u2029é☃\xff\xfe", Message: "é\x00z", Ready: &no}},
		"floats": {{CPUSeconds: 1e-7}, {CPUSeconds: 1e21}, {CPUSeconds: -2.5e-9}, {CPUSeconds: 123456789.125}, {CPUSeconds: 1e20}},
		"ints":   {{Pid: -1, Restarts: math.MaxInt32, MemoryBytes: math.MaxInt64, NextStartInMs: math.MinInt64}},
		"zone":   {{StartedAt: ptr(time.Date(2026, 1, 2, 3, 4, 5, 6, loc)), LastExit: &ExitInfo{FinishedAt: time.Date(1999, 12, 31, 23, 59, 59, 0, time.Local)}}},
	}
	for name, sts := range cases {
		t.Run(name, func(t *testing.T) {
			want, err := json.Marshal(sts)
			if err != nil {
				t.Fatal(err)
			}
			if got := appendStatusJSON(nil, sts); !bytes.Equal(got, want) {
				t.Fatalf("appendStatusJSON:\n got %s\nwant %s", got, want)
			}
		})
	}
	// What JSON cannot carry still gives valid JSON.
	got := appendStatusJSON(nil, []ProgramStatus{{CPUSeconds: math.NaN()}, {CPUSeconds: math.Inf(-1)}})
	var back []ProgramStatus
	if err := json.Unmarshal(got, &back); err != nil || back[0].CPUSeconds != 0 || back[1].CPUSeconds != 0 {
		t.Fatalf("NaN and Inf: %s, %v", got, err)
	}
}

func ptr[T any](v T) *T { return &v }

// FuzzStatusJSON holds the hand-written encoder to encoding/json for
// arbitrary strings and numbers.
func FuzzStatusJSON(f *testing.F) {
	f.Add("web", "Running", "", "KILL", 1.5, int64(42), int64(0))
	f.Add("\xff<\u2028", "a\"b", "\x00\n", "", 1e-9, int64(-1), int64(1)<<62)
	f.Fuzz(func(t *testing.T, name, state, msg, sig string, cpu float64, mem, next int64) {
		if math.IsNaN(cpu) || math.IsInf(cpu, 0) {
			cpu = 0
		}
		sts := []ProgramStatus{{Name: name, State: state, Message: msg, CPUSeconds: cpu, MemoryBytes: mem, NextStartInMs: next,
			LastExit: &ExitInfo{Signal: sig, Reason: msg}}}
		want, err := json.Marshal(sts)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendStatusJSON(nil, sts); !bytes.Equal(got, want) {
			t.Fatalf("appendStatusJSON:\n got %s\nwant %s", got, want)
		}
	})
}

func BenchmarkStatusEncode(b *testing.B) {
	sts, _ := benchBackend().Status(b.Context(), nil)
	b.Run("appendStatusJSON", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			buf = appendStatusJSON(buf[:0], sts)
		}
		b.SetBytes(int64(len(buf)))
	})
	b.Run("encoding-json", func(b *testing.B) {
		var n int
		for b.Loop() {
			out, _ := json.Marshal(sts)
			n = len(out)
		}
		b.SetBytes(int64(n))
	})
}
