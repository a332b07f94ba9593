package soak

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// end holds what the end-of-phase steps share.
type end struct {
	t       *testing.T
	sup     *supervisor
	m       *model
	cg      *soakCgroup
	cfgFile string
	marker  string
	logDir  string
	logf    func(format string, args ...any) // to driver.log
}

// report turns the driver's findings into test errors.
func (e *end) report(d *driver) {
	for _, f := range d.takeFailures() {
		e.t.Errorf("during the chaos: %s", f)
	}
}

// ctlOK runs a supervisectl command that must succeed.
func (e *end) ctlOK(args ...string) string {
	e.t.Helper()
	if e.logf != nil {
		e.logf("end phase: supervisectl %s", strings.Join(args, " "))
	}
	r, err := e.sup.ctl(args...)
	if err != nil {
		e.t.Fatalf("%v", err)
	}
	if r.code != 0 {
		e.t.Errorf("supervisectl %s: exit %d: %s", args[0], r.code, strings.TrimSpace(r.out))
	}
	return r.out
}

// status polls the status; a failure to get it ends the test.
func (e *end) status() map[string]programStatus {
	e.t.Helper()
	st, err := e.sup.status()
	if err != nil {
		if code, werr := e.sup.waitExit(5 * time.Second); werr == nil {
			e.t.Fatalf("supervise exited by itself (exit code %d) during the end phase; see the end of supervise.log", code)
		}
		e.t.Fatalf("status: %v", err)
	}
	return st
}

// poll calls cond until it holds or timeout passes; it waits for a state,
// never for a delay.
func poll(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(250 * time.Millisecond)
	}
	return true
}

// restore writes the intended config back and reloads it, then waits for
// the status to list exactly its programs.
func (e *end) restore(d *driver) {
	e.t.Helper()
	if err := writeAtomic(e.cfgFile, renderConfig(e.m.base, e.marker)); err != nil {
		e.t.Fatal(err)
	}
	e.ctlOK("reload")
	d.fig.reloadsCtl.Add(1)
	e.m.install(cloneAll(e.m.base), time.Now())
	var missing, extra []string
	ok := poll(settleTimeout, func() bool {
		st := e.status()
		missing, extra = nil, nil
		for n := range e.m.base {
			if _, ok := st[n]; !ok {
				missing = append(missing, n)
			}
		}
		for n, p := range st {
			if e.m.base[n] == nil {
				extra = append(extra, p.String())
			}
		}
		return len(missing) == 0 && len(extra) == 0
	})
	if !ok {
		sort.Strings(missing)
		sort.Strings(extra)
		e.t.Errorf("%v after reloading the intended config, the status does not list its programs: missing %v; not in the config %v",
			settleTimeout, missing, extra)
	}
}

// waitRunning waits until every program is where the driver left it: a
// steady program that should run is Running, one stopped is Stopped, a
// crashing one that should run keeps cycling (is not Stopped).
func (e *end) waitRunning(when string) {
	e.t.Helper()
	_, want, _ := e.m.snapshot()
	var wrong []string
	ok := poll(settleTimeout, func() bool {
		st := e.status()
		wrong = wrong[:0]
		for n, p := range e.m.base {
			s, listed := st[n]
			switch {
			case !listed:
				wrong = append(wrong, n+" missing")
			case p.kind == kindOneShot:
			case !want[n] && s.State != "Stopped":
				wrong = append(wrong, fmt.Sprintf("%s (want Stopped)", s))
			case want[n] && p.steady() && (s.State != "Running" || s.Pid == 0):
				wrong = append(wrong, fmt.Sprintf("%s (want Running)", s))
			case want[n] && !p.steady() && (s.State == "Stopped" || s.State == "Failed"):
				wrong = append(wrong, fmt.Sprintf("%s (want it restarting)", s))
			}
		}
		return len(wrong) == 0
	})
	if !ok {
		sort.Strings(wrong)
		e.t.Errorf("%s: %d programs not as asked after %v:\n  %s", when, len(wrong), settleTimeout, strings.Join(wrong, "\n  "))
	}
}

// upgradeInPlace upgrades the supervisor in place to its own binary, with
// the chaos over, and checks the take-over: the same supervisor process,
// every steady program still in the process it had. During the chaos
// the workers are nearly always busy, so most of the USR2s the driver
// sends are refused; this one must complete, and the rest of the end
// phase (the one-shots, the stop, the bounds, the shutdown) runs on the
// binary that took over.
func (e *end) upgradeInPlace() {
	e.t.Helper()
	before := e.status()
	// The workers finish what the end of the chaos left (a crashing
	// program's restart, say) within a few attempts; a refusal says so
	// and changes nothing.
	var out string
	done := poll(settleTimeout, func() bool {
		if e.logf != nil {
			e.logf("end phase: supervisectl upgrade")
		}
		r, err := e.sup.ctl("upgrade")
		if err != nil {
			e.t.Fatalf("%v", err)
		}
		out = strings.TrimSpace(r.out)
		return r.code == 0
	})
	if !done {
		e.t.Errorf("no upgrade in place completed within %v with the chaos over; the last answer: %s", settleTimeout, out)
		return
	}
	if e.sup.exited() {
		e.t.Fatalf("supervise exited during an upgrade in place (it should have gone on as the new binary); see the end of supervise.log")
	}
	after := e.status()
	var moved []string
	for n, p := range e.m.base {
		b, a := before[n], after[n]
		if p.steady() && b.State == "Running" && b.Pid != 0 && (a.State != "Running" || a.Pid != b.Pid) {
			moved = append(moved, fmt.Sprintf("%s: before %s, after %s", n, b, a))
		}
	}
	if len(moved) > 0 {
		sort.Strings(moved)
		e.t.Errorf("an upgrade in place restarted or lost %d programs it should have kept running:\n  %s", len(moved), strings.Join(moved, "\n  "))
	}
}

// oneShotsOnce runs every one-shot once more, with no chaos, and waits for
// each to complete: the last run in each log is then one that finished
// cleanly, and must be whole.
func (e *end) oneShotsOnce() {
	e.t.Helper()
	var names []string
	for n, p := range e.m.base {
		if p.kind == kindOneShot {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	e.ctlOK(append([]string{"restart"}, names...)...)
	var wrong []string
	ok := poll(settleTimeout, func() bool {
		st := e.status()
		wrong = wrong[:0]
		for _, n := range names {
			s := st[n]
			if s.State != "Completed" || s.LastExit == nil || s.LastExit.Code != 0 {
				wrong = append(wrong, s.String())
			}
		}
		return len(wrong) == 0
	})
	if !ok {
		e.t.Errorf("one-shots not Completed with exit 0 after %v: %s", settleTimeout, strings.Join(wrong, "; "))
		return
	}
	for _, n := range names {
		if err := lastRunWhole(filepath.Join(e.logDir, n+".log")); err != nil {
			e.t.Errorf("one-shot %s finished cleanly but its log is not whole: %v", n, err)
		}
	}
}

// stopAll stops every program but the keeper and waits until none of
// them has a process.
func (e *end) stopAll(when string) {
	e.t.Helper()
	var names []string
	for _, n := range e.m.names() {
		if n != keeperName {
			names = append(names, n)
		}
	}
	e.ctlOK(append([]string{"stop"}, names...)...)
	for _, n := range names {
		e.m.setWant(n, false)
	}
	var wrong []string
	ok := poll(settleTimeout, func() bool {
		wrong = wrong[:0]
		for _, s := range e.status() {
			switch {
			case s.Name == keeperName:
				if s.State != "Running" {
					wrong = append(wrong, s.String()+" (the keeper must run)")
				}
			case s.Pid != 0 || (s.State != "Stopped" && s.State != "Completed" && s.State != "Failed"):
				wrong = append(wrong, s.String())
			}
		}
		return len(wrong) == 0
	})
	if !ok {
		e.t.Errorf("%s: programs still up %v after stopping them: %s", when, settleTimeout, strings.Join(wrong, "; "))
	}
}

// quiet checks the state after stop all: no process below the supervisor
// (no zombie either), no sandbox cgroup; then it samples the supervisor.
// With base, it waits for the fd count to come within fdSlack of it, so a
// connection closing late is not taken for a leak.
func (e *end) quiet(when string, base *sample) sample {
	e.t.Helper()
	var left []task
	if !poll(leftoverTimeout, func() bool {
		keeper := e.status()[keeperName].Pid
		left = slices.DeleteFunc(descendants(allTasks(), e.sup.pid), func(t task) bool { return t.pid == keeper })
		return len(left) == 0
	}) {
		zombies := 0
		for _, t := range left {
			if t.state == 'Z' {
				zombies++
			}
		}
		e.t.Errorf("%s: %d processes (%d zombies) below the supervisor %v after every program stopped:\n%s",
			when, len(left), zombies, leftoverTimeout, describe(left))
	}
	var dirs []string
	if !poll(leftoverTimeout, func() bool {
		dirs = slices.DeleteFunc(e.cg.sandboxDirs(), func(d string) bool { return programOfSandbox(d) == keeperName })
		return len(dirs) == 0
	}) {
		var b strings.Builder
		removed := 0
		for _, dir := range dirs {
			prog := programOfSandbox(dir)
			if e.m.removedTimes(prog) > 0 {
				removed++
			}
			fmt.Fprintf(&b, "  %s (program %s, removed by %d reloads during the run): %d processes in it\n",
				dir, prog, e.m.removedTimes(prog), len(e.cg.sandboxProcs(dir)))
		}
		e.t.Errorf("%s: %d sandbox cgroups left %v after every program stopped (the supervisor lost track of them; "+
			"%d of them of programs a reload removed during the run):\n%s",
			when, len(dirs), leftoverTimeout, removed, b.String())
	}
	var s sample
	if base == nil {
		// The fewest fds of three looks a second apart: the baseline
		// should not include a connection in flight.
		for i := range 3 {
			x := e.sup.sample()
			if i == 0 || x.fds < s.fds {
				s = x
			}
			time.Sleep(time.Second)
		}
		return s
	}
	poll(time.Minute, func() bool {
		s = e.sup.sample()
		return s.fds <= base.fds+fdSlack
	})
	return s
}

// runProcesses lists what is left of the run: anything in our cgroups,
// anything carrying the run's marker in its environment, any process of
// our binary.
func (e *end) runProcesses() []task {
	seen := map[int]bool{}
	var out []task
	for _, pid := range e.cg.procs() {
		if t, ok := readTask(pid); ok && !seen[pid] {
			seen[pid] = true
			out = append(out, t)
		}
	}
	for _, t := range runMarked(e.marker, binary) {
		if !seen[t.pid] {
			seen[t.pid] = true
			out = append(out, t)
		}
	}
	return out
}

var panicRE = regexp.MustCompile(`(?i)panic|fatal error|data race|illegal state transition|commands did not end before the upgrade`)

// checkLog looks through the supervisor's own log for panics (a handler's
// or a reconcile's panic is recovered and logged, so it shows only there),
// for moves the lifecycle table refused, and for commands an upgrade in
// place (USR2) cut off at its exec.
func (e *end) checkLog() {
	b, err := os.ReadFile(e.sup.logPath)
	if err != nil {
		e.t.Errorf("reading supervise.log: %v", err)
		return
	}
	var hits []string
	for _, l := range strings.Split(string(b), "\n") {
		if panicRE.MatchString(l) {
			hits = append(hits, l)
		}
	}
	if len(hits) > 0 {
		if len(hits) > 10 {
			hits = hits[:10]
		}
		e.t.Errorf("supervise.log reports panics, illegal state transitions or commands cut off by an upgrade:\n%s", strings.Join(hits, "\n"))
	}
}

// programOfSandbox strips proc's "-<supervisor pid>-<sequence>" from a
// sandbox id.
func programOfSandbox(id string) string {
	for range 2 {
		if i := strings.LastIndexByte(id, '-'); i > 0 {
			id = id[:i]
		}
	}
	return id
}

var msgRE = regexp.MustCompile(`level=(WARN|ERROR) msg=("(?:[^"\\]|\\.)*"|\S+)`)

// logSummary counts the supervisor's warnings and errors by message.
func (e *end) logSummary() string {
	b, _ := os.ReadFile(e.sup.logPath)
	count := map[string]int{}
	for _, l := range strings.Split(string(b), "\n") {
		if m := msgRE.FindStringSubmatch(l); m != nil {
			count[m[1]+" "+strings.Trim(m[2], `"`)]++
		}
	}
	if len(count) == 0 {
		return "none"
	}
	keys := slices.Sorted(maps.Keys(count))
	sort.SliceStable(keys, func(i, j int) bool { return count[keys[i]] > count[keys[j]] })
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d× %s", count[k], k))
	}
	return strings.Join(parts, "; ")
}

// stopLast checks that supervise stays up with every program stopped by
// command: they can be started again, only `supervisectl shutdown` or a
// signal ends it. First every program that never ran (autostart = false)
// runs once and is stopped, since one that never ran keeps supervise up in
// any case; then the keeper, the last one running, is stopped. It waits
// stayUp to see supervise stay: the exit, when it comes, is immediate.
func (e *end) stopLast() {
	e.t.Helper()
	var never []string
	for n, s := range e.status() {
		if s.LastExit == nil && s.Pid == 0 {
			never = append(never, n)
		}
	}
	sort.Strings(never)
	if len(never) > 0 {
		e.ctlOK(append([]string{"start", "--no-wait"}, never...)...)
		e.ctlOK(append([]string{"stop"}, never...)...)
	}
	e.ctlOK("stop", keeperName)
	if poll(stayUp, e.sup.exited) {
		code, _ := e.sup.waitExit(time.Second)
		e.t.Errorf("supervise exited by itself (exit code %d) when the last running program was stopped by `supervisectl stop`: "+
			"every program had run and was stopped by command, none had ended on its own; it should stay up until shutdown "+
			"(minimal repro: one program `sleep 100000`, `supervisectl stop NAME`)", code)
	}
}
