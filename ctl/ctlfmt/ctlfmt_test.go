package ctlfmt

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/ctl"
	"github.com/supervise-dev/supervise/logs"
)

func TestDuration(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"}, {-time.Second, "0s"}, {1499 * time.Millisecond, "1s"}, {40 * time.Second, "40s"},
		{59 * time.Second, "59s"}, {60 * time.Second, "1m"}, {185 * time.Second, "3m5s"},
		{time.Hour, "1h"}, {2*time.Hour + 15*time.Minute + 10*time.Second, "2h15m"},
		{76 * time.Hour, "3d4h"}, {48 * time.Hour, "2d"},
	} {
		if got := Duration(tc.d); got != tc.want {
			t.Errorf("Duration(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestBytes(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0B"}, {1023, "1023B"}, {1024, "1Ki"}, {1536, "1.5Ki"}, {10 << 20, "10Mi"},
		{9961472, "9.5Mi"}, {256 << 20, "256Mi"}, {1288490188, "1.1Gi"}, {3 << 40, "3Ti"},
	} {
		if got := Bytes(tc.n); got != tc.want {
			t.Errorf("Bytes(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

func TestStateAndLastExit(t *testing.T) {
	no, yes := false, true
	for _, tc := range []struct {
		st   ctl.ProgramStatus
		want string
	}{
		{ctl.ProgramStatus{State: "Running"}, "Running"},
		{ctl.ProgramStatus{State: "Running", Ready: &yes}, "Running"},
		{ctl.ProgramStatus{State: "Running", Ready: &no}, "Running (not ready)"},
		{ctl.ProgramStatus{State: "CrashLoopBackOff", NextStartInMs: 40000}, "CrashLoopBackOff (next start in 40s)"},
		{ctl.ProgramStatus{State: "CrashLoopBackOff", NextStartInMs: 1}, "CrashLoopBackOff (next start in 1s)"},
		{ctl.ProgramStatus{State: "CrashLoopBackOff", NextStartInMs: 299001}, "CrashLoopBackOff (next start in 5m)"},
		{ctl.ProgramStatus{State: "Completed", NextRunInMs: 89500}, "Completed (next run in 1m30s)"},
		{ctl.ProgramStatus{State: "Running", Ready: &yes, NextRunInMs: 1}, "Running (next run in 1s)"},
		{ctl.ProgramStatus{State: "CrashLoopBackOff", NextStartInMs: 1000, NextRunInMs: 60000}, "CrashLoopBackOff (next start in 1s)"},
	} {
		if got := State(tc.st); got != tc.want {
			t.Errorf("State(%+v) = %q, want %q", tc.st, got, tc.want)
		}
	}
	for _, tc := range []struct {
		e    *ctl.ExitInfo
		want string
	}{
		{nil, "-"},
		{&ctl.ExitInfo{Code: 0, Reason: "Completed"}, "exit 0"},
		{&ctl.ExitInfo{Code: 1, Reason: "Error"}, "exit 1"},
		{&ctl.ExitInfo{Code: 137, Signal: "KILL", Reason: "Signaled"}, "exit 137 (SIGKILL)"},
		{&ctl.ExitInfo{Code: -1, Signal: "KILL", Reason: "Signaled"}, "signal KILL"}, // a server from before 128+N
		{&ctl.ExitInfo{Code: 137, Signal: "KILL", Reason: "OOMKilled"}, "OOMKilled"},
		{&ctl.ExitInfo{Code: -1, Reason: "StartError"}, "StartError"},
		{&ctl.ExitInfo{Code: -1, Signal: "KILL", Reason: "LivenessProbeFailed"}, "LivenessProbeFailed"},
	} {
		if got := LastExit(tc.e); got != tc.want {
			t.Errorf("LastExit(%+v) = %q, want %q", tc.e, got, tc.want)
		}
	}
}

func TestStatusTable(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	started := now.Add(-3*time.Hour - 4*time.Minute)
	sts := []ctl.ProgramStatus{
		{Name: "web", State: "Running", Pid: 4242, StartedAt: &started, Restarts: 2,
			LastExit: &ctl.ExitInfo{Code: 1, Reason: "Error"}, MemoryBytes: 12 << 20, CPUSeconds: 1.5},
		{Name: "worker:1", State: "CrashLoopBackOff", NextStartInMs: 40000, Restarts: 5,
			LastExit: &ctl.ExitInfo{Code: 137, Signal: "KILL", Reason: "OOMKilled"}, Message: "back-off 40s\nrestarting"},
		{Name: "db", State: "Stopped"},
	}
	var b bytes.Buffer
	if err := StatusTable(&b, sts, now, false); err != nil {
		t.Fatal(err)
	}
	want := `NAME      STATE                                 PID   UPTIME  RESTARTS  LAST EXIT  MEM   CPU    MESSAGE
web       Running                               4242  3h4m    2         exit 1     12Mi  1.50s
worker:1  CrashLoopBackOff (next start in 40s)  -     -       5         OOMKilled  -     -      back-off 40s restarting
db        Stopped                               -     -       0         -          -     -
`
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}

	// Colour paints the states without moving the columns.
	b.Reset()
	StatusTable(&b, sts[:1], now, true)
	lines := strings.Split(b.String(), "\n")
	if !strings.Contains(lines[1], green+"Running  "+reset) || strings.ReplaceAll(strings.ReplaceAll(strings.ReplaceAll(lines[1], green, ""), reset, ""), bold, "") !=
		"web   Running  4242  3h4m    2         exit 1     12Mi  1.50s" {
		t.Errorf("coloured row %q", lines[1])
	}
}

func TestLogLineAndEvent(t *testing.T) {
	var b bytes.Buffer
	LogLine(&b, logs.Line{Program: "web", Stream: "stdout", Text: "hello"}, 6, false, false)
	LogLine(&b, logs.Line{Program: "worker", Stream: "stderr", Text: "oops"}, 6, false, false)
	if want := "web    | hello\nworker | oops\n"; b.String() != want {
		t.Errorf("log lines %q, want %q", b.String(), want)
	}
	if NameColour("web:0") != NameColour("web:1") {
		t.Error("instances of one program get different colours")
	}
	if NameColour("job") != NameColour("job#1") || NameColour("job:0") != NameColour("job:0#2") {
		t.Error("the runs of a job get another colour than the job")
	}
	b.Reset()
	ts := time.Date(2026, 11, 22, 12, 0, 0, 0, time.Local)
	Event(&b, ctl.Event{Time: ts, Program: "web", From: "Running", To: "Exited", Message: "exit 1"}, false)
	if want := "2026-11-22 12:00:00.000  web  Running → Exited  exit 1\n"; b.String() != want {
		t.Errorf("event %q, want %q", b.String(), want)
	}
}

// A program's sd_notify STATUS= reaches the MESSAGE column; whatever it
// holds, the table shows it escaped, on a terminal or not.
func TestStatusTableEscapesMessages(t *testing.T) {
	var b strings.Builder
	err := StatusTable(&b, []ctl.ProgramStatus{{Name: "evil", State: "Running", Message: "\x1b]0;owned\x07\x1b[2Jbusy\nsecond"}}, time.Now(), false)
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(b.String(), "\x1b\x07") || !strings.Contains(b.String(), `\x1b]0;owned\x07\x1b[2Jbusy second`) {
		t.Fatalf("table:\n%q", b.String())
	}
	b.Reset()
	Event(&b, ctl.Event{Program: "evil", To: "Running", Message: "\x1b]0;owned\x07"}, false)
	if strings.ContainsAny(b.String(), "\x1b\x07") {
		t.Fatalf("event:\n%q", b.String())
	}
}

func TestNoInstances(t *testing.T) {
	sts := []ctl.ProgramStatus{{Name: "db"}, {Name: "web:0"}, {Name: "web:1"}}
	got := NoInstances([]string{"all", "db", "web", "web:1", "idle", "we"}, sts)
	if strings.Join(got, ",") != "idle,we" {
		t.Errorf("NoInstances = %q, want idle and we", got)
	}
}
