package integration

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// What a user who knows the kubelet expects of HTTP probes and hooks, and
// of a run its liveness probe ended, with real servers and the real binary.
func TestKubeletHTTPAndLivenessSemantics(t *testing.T) {
	var hookHits atomic.Int32
	var hookHost atomic.Value
	mux := http.NewServeMux()
	mux.HandleFunc("/secret500", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, "secret-token=abc123 internal error")
	})
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("/hook418", func(w http.ResponseWriter, r *http.Request) {
		hookHits.Add(1)
		hookHost.Store(r.Host)
		w.WriteHeader(http.StatusTeapot)
	})
	mux.HandleFunc("/stall", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "partial")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	base := "http://" + ln.Addr().String()
	port := ln.Addr().(*net.TCPAddr).Port
	mux.HandleFunc("/elsewhere", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://localhost:"+strconv.Itoa(port)+"/secret500", http.StatusTemporaryRedirect)
	})

	dir, file := writeConfig(t, `
[program.secretive]
command = ["sleep", "1000"]
[program.secretive.probes.readiness]
http = "`+base+`/secret500"
period = "100ms"

[program.redirected]
command = ["sleep", "1000"]
[program.redirected.probes.readiness]
http = "`+base+`/elsewhere"
period = "100ms"

[program.stalled]
command = ["sleep", "1000"]
[program.stalled.probes.readiness]
http = "`+base+`/stall"
period = "200ms"
timeout = "100ms"

[program.hooked]
command = ["sleep", "1000"]
[program.hooked.hooks.post_start]
http = { url = "`+base+`/hook418", headers = { Host = "app.internal" } }

[program.trapper]
command = ["sh", "-c", "trap 'exit 0' TERM; while :; do sleep 0.05; done"]
restart = "on-failure"
# Fails once per "hang" file: the probe that finds it removes it, so the
# successor, whose shell may not have set its trap yet, is not failed too.
[program.trapper.probes.liveness]
command = ["sh", "-c", "! rm hang 2>/dev/null"]
period = "100ms"
failure_threshold = 1
`)
	d := startDaemon(t, dir, file)
	eventually(t, "probes answered, hook done, trapper running", 30*time.Second, func() bool {
		st := d.healthStatus()
		return st["secretive"].Probes["readiness"].Message != "" && isReady(st["redirected"]) &&
			st["stalled"].Probes["readiness"].Message != "" && st["hooked"].State == "Running" && st["trapper"].State == "Running"
	})
	st := d.healthStatus()
	if m := st["secretive"].Probes["readiness"].Message; m != "HTTP 500" || isReady(st["secretive"]) {
		t.Errorf("a 500 probe: message %q, ready %v; want \"HTTP 500\", not ready", m, isReady(st["secretive"]))
	}
	if m := st["stalled"].Probes["readiness"].Message; !strings.Contains(m, "timed out") || isReady(st["stalled"]) {
		t.Errorf("a stalled body: message %q, ready %v; want a timeout, not ready", m, isReady(st["stalled"]))
	}
	if hookHits.Load() != 1 || hookHost.Load() != "app.internal" {
		t.Errorf("post_start hook calls: %d with Host %v; want 1 with app.internal", hookHits.Load(), hookHost.Load())
	}
	statusJSON, _ := d.ctl("status", "--json")
	events, _ := d.ctl("events", "--json")
	if strings.Contains(statusJSON+events, "secret-token") {
		t.Errorf("a probe's response body shows in status or events")
	}
	if !strings.Contains(events, "readiness probe: HTTP 307: the redirect to another host (localhost:"+strconv.Itoa(port)+") was not followed") {
		t.Errorf("no warning event for the redirect to another host:\n%s", tail(events, 20))
	}

	// Liveness fails; the program traps SIGTERM and exits 0: still a
	// failure, restarted under on-failure.
	pid := d.status()["trapper"].Pid
	if err := os.WriteFile(filepath.Join(dir, "hang"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var exit struct {
		LastExit *struct {
			Code   int    `json:"code"`
			Signal string `json:"signal"`
			Reason string `json:"reason"`
		} `json:"last_exit"`
	}
	eventually(t, "trapper killed for its liveness", 30*time.Second, func() bool {
		out, _ := d.ctl("status", "--json", "trapper")
		var list []json.RawMessage
		if json.Unmarshal([]byte(out), &list) != nil || len(list) != 1 || json.Unmarshal(list[0], &exit) != nil {
			return false
		}
		return exit.LastExit != nil && exit.LastExit.Reason == "LivenessProbeFailed"
	})
	if exit.LastExit.Code != 0 || exit.LastExit.Signal != "" {
		t.Errorf("the trapper's exit: %+v; want code 0 (it traps SIGTERM)", *exit.LastExit)
	}
	os.Remove(filepath.Join(dir, "hang"))
	eventually(t, "trapper restarted", 60*time.Second, func() bool {
		s := d.status()["trapper"]
		return s.State == "Running" && s.Pid != pid && s.Restarts >= 1
	})
}

// A pre_stop longer than stop_timeout is cut at the grace, and the stop
// signal still gets min_stop_grace (2s by default): the TERM handler runs.
func TestPreStopLeavesTheStopSignalItsGrace(t *testing.T) {
	dir, file := writeConfig(t, `
[program.app]
command = ["sh", "-c", "trap 'touch termed; exit 0' TERM; while :; do sleep 0.05; done"]
stop_timeout = "1s"
[program.app.hooks.pre_stop]
command = ["sleep", "30"]
`)
	d := startDaemon(t, dir, file)
	d.running("app")
	d.ctlOK("stop", "app")
	if _, err := os.Stat(filepath.Join(dir, "termed")); err != nil {
		t.Fatalf("the TERM handler did not run: %v", err)
	}
	out, _ := d.ctl("status", "--json", "app")
	var list []struct {
		LastExit *struct {
			Code   int    `json:"code"`
			Signal string `json:"signal"`
		} `json:"last_exit"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) != 1 || list[0].LastExit == nil {
		t.Fatalf("status: %v: %s", err, out)
	}
	if e := list[0].LastExit; e.Code != 0 || e.Signal != "" {
		t.Errorf("app's exit: code %d signal %q; want 0 from its TERM handler, not a SIGKILL", e.Code, e.Signal)
	}
}

// A one-shot job that uses an always-restarting proxy marked as a sidecar:
// the job starts once the proxy runs, and when the job completes supervise
// stops the proxy and exits with the job's status.
func TestSidecarEndsWithTheJob(t *testing.T) {
	dir, file := writeConfig(t, `
[program.proxy]
command = ["sleep", "1000"]
sidecar = true

[program.job]
command = ["sh", "-c", "sleep 0.2; exit 3"]
restart = "never"
depends_on = ["proxy"]
`)
	d := startDaemon(t, dir, file)
	if code := d.wait(60 * time.Second); code != 3 {
		t.Fatalf("supervise exited %d, want 3 (the job's status)", code)
	}
}

// supervisectl restart replaces a program's instances one at a time, each
// successor ready (its readiness probe) before the next instance stops,
// and returns when all are ready; --all-at-once stops them together.
func TestRollingRestartWithTheBinary(t *testing.T) {
	dir, file := writeConfig(t, `
[program.web]
command = ["sh", "-c", "sleep 0.3; touch up.$SUPERVISE_INSTANCE; exec sleep 1000"]
instances = 2
# The marker of the instance's last run goes before the new one starts:
# removed by the program itself, it could pass a probe made before that.
[program.web.hooks.pre_start]
command = ["sh", "-c", "rm -f up.$SUPERVISE_INSTANCE"]
[program.web.probes.readiness]
command = ["sh", "-c", "test -f up.$SUPERVISE_INSTANCE"]
period = "100ms"
`)
	d := startDaemon(t, dir, file)
	eventually(t, "both instances ready", 30*time.Second, func() bool {
		st := d.healthStatus()
		return isReady(st["web:0"]) && isReady(st["web:1"])
	})
	before, _ := d.ctl("events", "--json")
	d.ctlOK("restart", "web")
	st := d.healthStatus()
	if !isReady(st["web:0"]) || !isReady(st["web:1"]) {
		t.Fatalf("restart returned before both were ready: %+v", st)
	}
	after, _ := d.ctl("events", "--json")
	var order []string
	for _, l := range strings.Split(strings.TrimPrefix(after, before), "\n") {
		var ev struct{ Program, From, To, Message string }
		if json.Unmarshal([]byte(l), &ev) != nil {
			continue
		}
		switch {
		case ev.To == "Stopping":
			order = append(order, ev.Program+" stopping")
		case ev.Message == "ready":
			order = append(order, ev.Program+" ready")
		}
	}
	want := []string{"web:0 stopping", "web:0 ready", "web:1 stopping", "web:1 ready"}
	if strings.Join(order, ", ") != strings.Join(want, ", ") {
		t.Errorf("events %v, want %v", order, want)
	}
}
