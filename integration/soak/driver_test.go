package soak

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// followTimeout is how long the status may disagree with the config the
// driver last installed (a program missing, or one removed still listed)
// before it counts as lost: a removal waits at most a stop_timeout (3 s)
// and hooks (20 s each), so this is many times what it takes on a
// crawling machine.
const followTimeout = 2 * time.Minute

// asyncApplied is how long after a SIGHUP or a rewrite of the config file
// the driver takes the reload to be applied (the watcher debounces 200 ms;
// the apply takes milliseconds).
const asyncApplied = 10 * time.Second

// zombieTimeout is how long a zombie below the supervisor may stay
// unreaped before it counts as leaked; reaping takes microseconds, this
// leaves room for a machine stalled for a minute.
const zombieTimeout = time.Minute

// figures are the driver's counts, for the report.
type figures struct {
	kills, killMisses      atomic.Int64
	signalsCtl             atomic.Int64 // supervisectl signal
	signalsDirect          atomic.Int64 // kill(2) through a pidfd
	signalsSupervisor      atomic.Int64 // USR1 (ignored) or USR2 (an upgrade in place) to the supervisor
	upgrades               atomic.Int64 // of them USR2
	reloadsCtl, reloadsHUP atomic.Int64
	reloadsWatch           atomic.Int64 // config rewritten, reload left to the file watcher
	reloadsBad, flaps      atomic.Int64
	added, removed         atomic.Int64 // programs added and removed by reloads (flaps apart)
	changed                atomic.Int64 // programs changed by reloads
	statusPolls            atomic.Int64
	maxZombies             atomic.Int64 // most zombies below the supervisor in one scan (unreaped yet)

	mu  sync.Mutex
	ctl map[string]int // supervisectl calls by verb
}

func (f *figures) countCtl(verb string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ctl == nil {
		f.ctl = map[string]int{}
	}
	f.ctl[verb]++
}

func (f *figures) ctlSummary() (total int, by string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var parts []string
	for _, v := range slices.Sorted(maps.Keys(f.ctl)) {
		total += f.ctl[v]
		parts = append(parts, fmt.Sprintf("%s %d", v, f.ctl[v]))
	}
	return total, strings.Join(parts, ", ")
}

// driver is the chaos: actors that run until their context ends.
type driver struct {
	sup     *supervisor
	m       *model
	cfgFile string
	marker  string
	seed    uint64
	fig     *figures

	snap      atomic.Pointer[map[string]programStatus] // the last status poll
	lastAsync atomic.Int64                             // when the last reload by SIGHUP or watcher was asked (UnixNano)

	logMu sync.Mutex
	log   *os.File // driver.log: what the driver did, when

	mu         sync.Mutex
	failures   []string
	failedOnce map[string]bool
	cancel     context.CancelFunc // of the running phase
	restarts   map[string]int     // last restart count seen, by name
	retired    int                // restarts of programs no longer listed
	mismatch   map[string]time.Time
	zombies    map[[2]uint64]time.Time
}

func newDriver(sup *supervisor, m *model, cfgFile, marker string, seed uint64, log *os.File) *driver {
	return &driver{
		sup: sup, m: m, cfgFile: cfgFile, marker: marker, seed: seed, fig: &figures{}, log: log,
		failedOnce: map[string]bool{}, restarts: map[string]int{},
		mismatch: map[string]time.Time{}, zombies: map[[2]uint64]time.Time{},
	}
}

// logf appends one action to driver.log, to line up with supervise.log.
func (d *driver) logf(format string, args ...any) {
	d.logMu.Lock()
	defer d.logMu.Unlock()
	fmt.Fprintf(d.log, "%s %s\n", time.Now().UTC().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// failf records a failure of the supervisor found by an actor; key dedups.
func (d *driver) failf(key, format string, args ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if key != "" {
		if d.failedOnce[key] {
			return
		}
		d.failedOnce[key] = true
	}
	d.failures = append(d.failures, fmt.Sprintf(format, args...))
}

// fatalf records a failure that ends the chaos: the supervisor died or hung.
func (d *driver) fatalf(format string, args ...any) {
	d.failf("", format, args...)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cancel != nil {
		d.cancel()
	}
}

func (d *driver) takeFailures() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	f := d.failures
	d.failures = nil
	return f
}

// ctl runs supervisectl for an actor, counting it; a hang is fatal.
func (d *driver) ctl(args ...string) (ctlResult, bool) {
	d.fig.countCtl(args[0])
	r, err := d.sup.ctl(args...)
	if err != nil {
		if d.sup.exited() {
			d.fatalf("supervise exited during the chaos: %v\n%s", d.sup.waitErr, d.sup.logTail(40))
		} else {
			d.fatalf("%v", err)
		}
		return r, false
	}
	if r.code == 3 { // no supervisor at the socket
		d.fatalf("supervisectl %s: no supervisor at the socket (exit 3): %s", args[0], strings.TrimSpace(r.out))
		return r, false
	}
	return r, true
}

// run runs the actors until ctx ends (or a fatal failure) and waits for
// them.
func (d *driver) run(ctx context.Context, phase uint64) {
	ctx, cancel := context.WithCancel(ctx)
	d.mu.Lock()
	d.cancel = cancel
	d.mu.Unlock()
	defer cancel()
	var wg sync.WaitGroup
	actor := func(id uint64, pace func(r *rand.Rand) time.Duration, act func(r *rand.Rand)) {
		r := rand.New(rand.NewPCG(d.seed, phase<<8|id))
		wg.Go(func() {
			t := time.NewTimer(pace(r))
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
				act(r)
				t.Reset(pace(r))
			}
		})
	}
	between := func(lo, hi time.Duration) func(r *rand.Rand) time.Duration {
		return func(r *rand.Rand) time.Duration { return lo + time.Duration(r.Int64N(int64(hi-lo))) }
	}
	actor(1, between(time.Second, time.Second+1), func(*rand.Rand) { d.pollStatus() })
	actor(2, between(2*time.Second, 2*time.Second+1), func(*rand.Rand) { d.scanZombies() })
	actor(3, between(100*time.Millisecond, 500*time.Millisecond), d.killOne)
	actor(4, between(200*time.Millisecond, 700*time.Millisecond), d.signalOne)
	actor(5, between(300*time.Millisecond, 1500*time.Millisecond), d.commandOne)
	actor(6, between(300*time.Millisecond, 1500*time.Millisecond), d.commandOne)
	actor(7, between(2*time.Second, 5*time.Second), d.reloadOnce)
	<-ctx.Done()
	wg.Wait()
}

// pollStatus takes the status every actor picks from, counts restarts and
// checks that the status follows the config: a program of the config
// missing for followTimeout is lost, one removed still listed is stuck.
func (d *driver) pollStatus() {
	r, ok := d.ctl("status", "--json")
	if !ok {
		return
	}
	d.fig.statusPolls.Add(1)
	st, err := decodeStatus(r)
	if err != nil {
		d.failf("status-decode", "%v", err)
		return
	}
	d.snap.Store(&st)
	now := time.Now()
	cur, _, touched := d.m.snapshot()

	d.mu.Lock()
	defer d.mu.Unlock()
	for n, c := range d.restarts {
		if _, ok := st[n]; !ok {
			d.retired += c
			delete(d.restarts, n)
		}
	}
	for n, p := range st {
		d.restarts[n] = p.Restarts
	}
	bad := map[string]string{}
	for n := range cur {
		if _, ok := st[n]; !ok {
			bad[n] = "in the config but missing from status"
		}
	}
	for n, p := range st {
		if cur[n] == nil {
			bad[n] = fmt.Sprintf("removed from the config but still in status (%s)", p)
		}
	}
	for n := range d.mismatch {
		if bad[n] == "" {
			delete(d.mismatch, n)
		}
	}
	for n, why := range bad {
		since := d.mismatch[n]
		if since.IsZero() {
			since = now
			d.mismatch[n] = now
		}
		if t := touched[n]; t.After(since) {
			since = t
		}
		if now.Sub(since) > followTimeout && !d.failedOnce["follow "+n] {
			d.failedOnce["follow "+n] = true
			d.failures = append(d.failures, fmt.Sprintf("%s: %s for %v after the last reload that touched it (%v ago)",
				n, why, now.Sub(since).Round(time.Second), now.Sub(touched[n]).Round(time.Second)))
		}
	}
}

func decodeStatus(r ctlResult) (map[string]programStatus, error) {
	if r.code != 0 {
		return nil, fmt.Errorf("supervisectl status: exit %d: %s", r.code, strings.TrimSpace(r.out))
	}
	return parseStatus(r.out)
}

// restartsDone is the sum of the restart counts seen: the programs listed
// now and those removed since.
func (d *driver) restartsDone() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := d.retired
	for _, c := range d.restarts {
		n += c
	}
	return n
}

// scanZombies looks for zombies below the supervisor; one that stays a
// zombie (same pid, same start time) for zombieTimeout was never reaped.
func (d *driver) scanZombies() {
	now := time.Now()
	seen := map[[2]uint64]bool{}
	var zs []task
	for _, t := range descendants(allTasks(), d.sup.pid) {
		if t.state == 'Z' {
			zs = append(zs, t)
			seen[[2]uint64{uint64(t.pid), t.start}] = true
		}
	}
	if n := int64(len(zs)); n > d.fig.maxZombies.Load() {
		d.fig.maxZombies.Store(n)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for k := range d.zombies {
		if !seen[k] {
			delete(d.zombies, k)
		}
	}
	for _, z := range zs {
		k := [2]uint64{uint64(z.pid), z.start}
		first, ok := d.zombies[k]
		if !ok {
			d.zombies[k] = now
			continue
		}
		if now.Sub(first) > zombieTimeout && !d.failedOnce[fmt.Sprint("zombie", k)] {
			d.failedOnce[fmt.Sprint("zombie", k)] = true
			d.failures = append(d.failures, fmt.Sprintf("zombie unreaped for %v:\n%s", now.Sub(first).Round(time.Second), describe([]task{z})))
		}
	}
}

// pick returns a random program of the last status with a process.
func (d *driver) pickRunning(r *rand.Rand) (programStatus, bool) {
	sp := d.snap.Load()
	if sp == nil {
		return programStatus{}, false
	}
	var running []programStatus
	for _, p := range *sp {
		if p.Pid > 0 {
			running = append(running, p)
		}
	}
	if len(running) == 0 {
		return programStatus{}, false
	}
	sort.Slice(running, func(i, j int) bool { return running[i].Name < running[j].Name })
	return running[r.IntN(len(running))], true
}

// killOne SIGKILLs a program's main process (from the status) or, one time
// in four, any process below the supervisor: a daemon, a hook, a sandbox
// init, a start stub.
func (d *driver) killOne(r *rand.Rand) {
	pid := 0
	if r.IntN(4) == 0 {
		ds := descendants(allTasks(), d.sup.pid)
		if len(ds) > 0 {
			pid = ds[r.IntN(len(ds))].pid
		}
	} else if p, ok := d.pickRunning(r); ok {
		pid = p.Pid
	}
	if pid == 0 {
		return
	}
	t, _ := readTask(pid)
	if err := signalDescendant(pid, d.sup.pid, syscall.SIGKILL); err != nil {
		d.fig.killMisses.Add(1) // it ended meanwhile
		return
	}
	d.fig.kills.Add(1)
	d.logf("SIGKILL pid %d (%s)", pid, t.comm)
}

var chaosSignals = []syscall.Signal{syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGTERM}

// signalOne sends HUP, USR1, USR2 or TERM to a program: through
// supervisectl (to its process group) or straight to its main process.
// Now and then the supervisor itself gets USR1, which it ignores, or
// USR2, which upgrades it in place (to the same binary): its programs,
// their pids and restart counts, and every command under way carry on
// (refused while a start or stop is under way, as a busy supervisor
// refuses it).
func (d *driver) signalOne(r *rand.Rand) {
	if r.IntN(50) == 0 {
		sig := []syscall.Signal{syscall.SIGUSR1, syscall.SIGUSR2}[r.IntN(2)]
		if err := syscall.Kill(d.sup.pid, sig); err == nil {
			d.fig.signalsSupervisor.Add(1)
			if sig == syscall.SIGUSR2 {
				d.fig.upgrades.Add(1)
			}
		}
		return
	}
	p, ok := d.pickRunning(r)
	if !ok {
		return
	}
	sig := chaosSignals[r.IntN(len(chaosSignals))]
	if r.IntN(2) == 0 {
		res, ok := d.ctl("signal", strings.TrimPrefix(signalName(sig), "SIG"), p.Name)
		if ok && res.code == 0 {
			d.fig.signalsCtl.Add(1)
			d.logf("supervisectl signal %s %s", signalName(sig), p.Name)
		}
		return
	}
	if signalDescendant(p.Pid, d.sup.pid, sig) == nil {
		d.fig.signalsDirect.Add(1)
		d.logf("%s to %s pid %d", signalName(sig), p.Name, p.Pid)
	}
}

func signalName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGUSR1:
		return "SIGUSR1"
	case syscall.SIGUSR2:
		return "SIGUSR2"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return fmt.Sprint(int(sig))
}

// commandOne starts, stops or restarts one program of the config under
// its lock, and records what was asked when the command succeeded.
func (d *driver) commandOne(r *rand.Rand) {
	names := d.m.names()
	if len(names) == 0 {
		return
	}
	if r.IntN(50) == 0 {
		d.restartAll()
		return
	}
	name := names[r.IntN(len(names))]
	if name == keeperName {
		return
	}
	unlock := d.m.lock(name)
	defer unlock()
	if d.m.program(name) == nil {
		return // removed by a reload meanwhile
	}
	verb := "restart"
	switch x := r.IntN(100); {
	case x < 20:
		verb = "stop"
	case x < 60:
		verb = "start"
	}
	res, ok := d.ctl(verb, name)
	if !ok {
		return
	}
	d.logf("supervisectl %s %s: exit %d", verb, name, res.code)
	if res.code != 0 {
		// A reload by SIGHUP or by the file watcher is applied a moment
		// after the driver installed it in the model: a program it added
		// may not be known yet.
		_, _, touched := d.m.snapshot()
		if strings.Contains(res.out, "unknown program") && time.Since(touched[name]) < followTimeout {
			return
		}
		// start and restart wait for the program to be ready: one that
		// crashes (most of them here) makes them say so and exit 1, and
		// it is still meant to run.
		if res.code == 1 && verb != "stop" && notReady(res.out) {
			d.m.setWant(name, true)
			return
		}
		d.failf("", "supervisectl %s %s: exit %d: %s", verb, name, res.code, strings.TrimSpace(res.out))
		return
	}
	d.m.setWant(name, verb != "stop")
}

// restartAll restarts every program at once, with every program's lock
// held so that no reload runs meanwhile. A program a reload is removing is
// not in the config any more: "all" must not bring it back (the status
// check sees it if it does). It waits for a reload by SIGHUP or by the
// watcher to be applied: until then the model is ahead of the supervisor.
func (d *driver) restartAll() {
	all := slices.Collect(maps.Keys(d.m.base))
	all = append(all, slices.Collect(maps.Keys(d.m.extras))...)
	unlock := d.m.lock(all...)
	defer unlock()
	if time.Since(time.Unix(0, d.lastAsync.Load())) < asyncApplied {
		return
	}
	res, ok := d.ctl("restart", "all")
	if !ok {
		return
	}
	d.logf("supervisectl restart all: exit %d", res.code)
	if res.code != 0 && !(res.code == 1 && notReady(res.out)) {
		d.failf("", "supervisectl restart all: exit %d: %s", res.code, strings.TrimSpace(res.out))
		return
	}
	for _, n := range d.m.names() {
		d.m.setWant(n, true)
	}
}

// reloadOnce rewrites the config and has it reloaded: mostly a few
// programs added, removed and changed; sometimes a flap (programs removed,
// then put back as they were, reloaded back to back); sometimes a broken
// file, which must be refused with the running config kept.
func (d *driver) reloadOnce(r *rand.Rand) {
	switch x := r.IntN(100); {
	case x < 8:
		d.reloadBad()
	case x < 20 && !*noRemoveFlag:
		d.reloadFlap(r)
	default:
		d.reloadChange(r)
	}
}

func (d *driver) reloadChange(r *rand.Rand) {
	cur, _, _ := d.m.snapshot()
	names := slices.DeleteFunc(slices.Sorted(maps.Keys(cur)), func(n string) bool { return n == keeperName })
	var extras []string
	for _, n := range slices.Sorted(maps.Keys(d.m.extras)) {
		if cur[n] == nil {
			extras = append(extras, n)
		}
	}
	var touched []string
	add := pickN(r, extras, r.IntN(3))
	remove := pickN(r, names, r.IntN(3))
	if *noRemoveFlag {
		add, remove = nil, nil
	}
	var change []string
	for _, n := range pickN(r, names, r.IntN(4)) {
		if !slices.Contains(remove, n) && cur[n].changeable() {
			change = append(change, n)
		}
	}
	touched = append(append(append(touched, add...), remove...), change...)
	if len(touched) == 0 {
		return
	}
	unlock := d.m.lock(touched...)
	defer unlock()
	cur, _, _ = d.m.snapshot() // under the locks: what commands left
	next := cloneAll(cur)
	for _, n := range add {
		next[n] = d.m.extras[n].clone()
	}
	for _, n := range remove {
		delete(next, n)
	}
	for _, n := range change {
		if p := next[n]; p != nil {
			mutate(r, p)
		}
	}
	if err := writeAtomic(d.cfgFile, renderConfig(next, d.marker)); err != nil {
		d.fatalf("writing the config: %v", err)
		return
	}
	d.logf("config: added %v, removed %v, changed %v", add, remove, change)
	d.fig.added.Add(int64(len(add)))
	d.fig.removed.Add(int64(len(remove)))
	d.fig.changed.Add(int64(len(change)))
	switch x := r.IntN(100); {
	case x < 60:
		res, ok := d.ctl("reload")
		if !ok {
			return
		}
		if res.code != 0 {
			d.failf("", "supervisectl reload of a good config: exit %d: %s", res.code, strings.TrimSpace(res.out))
		}
		d.fig.reloadsCtl.Add(1)
		d.logf("supervisectl reload: exit %d", res.code)
	case x < 85:
		if err := syscall.Kill(d.sup.pid, syscall.SIGHUP); err != nil {
			d.fatalf("SIGHUP to the supervisor: %v", err)
			return
		}
		d.fig.reloadsHUP.Add(1)
		d.lastAsync.Store(time.Now().UnixNano())
		d.logf("SIGHUP to the supervisor")
	default:
		d.fig.reloadsWatch.Add(1) // watch_config sees the rename
		d.lastAsync.Store(time.Now().UnixNano())
	}
	d.m.install(next, time.Now())
}

// mutate changes one setting of p: one that needs a new process (env, the
// sandbox's memory limit) or one applied in place (stop_timeout, backoff).
func mutate(r *rand.Rand, p *program) {
	switch r.IntN(4) {
	case 0:
		p.gen++
	case 1:
		p.stopTimeout = toggle(p.stopTimeout, "1s")
	case 2:
		p.backoffMax = toggle(p.backoffMax, "1s")
	default:
		p.extraMemory = !p.extraMemory
	}
}

func toggle(v, alt string) string {
	if v == "" {
		return alt
	}
	return ""
}

func (d *driver) reloadFlap(r *rand.Rand) {
	names := pickN(r, slices.DeleteFunc(d.m.names(), func(n string) bool { return n == keeperName }), 1+r.IntN(3))
	unlock := d.m.lock(names...)
	defer unlock()
	cur, _, _ := d.m.snapshot()
	without := cloneAll(cur)
	for _, n := range names {
		delete(without, n)
	}
	d.logf("flap: removing and putting back %v", names)
	for _, cfg := range []map[string]*program{without, cur} {
		if err := writeAtomic(d.cfgFile, renderConfig(cfg, d.marker)); err != nil {
			d.fatalf("writing the config: %v", err)
			return
		}
		res, ok := d.ctl("reload")
		if !ok {
			return
		}
		if res.code != 0 {
			d.failf("", "supervisectl reload of a good config: exit %d: %s", res.code, strings.TrimSpace(res.out))
		}
		d.fig.reloadsCtl.Add(1)
		d.m.install(cloneAll(cfg), time.Now())
	}
	d.fig.flaps.Add(1)
}

// reloadBad writes a config with an unknown key: the reload must fail and
// change nothing; then the good file goes back.
func (d *driver) reloadBad() {
	unlock := d.m.lock() // no program changes; the good file is rewritten below
	defer unlock()
	cur, _, _ := d.m.snapshot()
	good := renderConfig(cur, d.marker)
	if err := writeAtomic(d.cfgFile, good+"\n[program.broken]\ncommand = [\"true\"]\nno_such_key = 1\n"); err != nil {
		d.fatalf("writing the config: %v", err)
		return
	}
	d.logf("config: broken")
	res, ok := d.ctl("reload")
	if !ok {
		return
	}
	if res.code == 0 {
		d.failf("bad-reload", "supervisectl reload of a config with an unknown key succeeded: %s", strings.TrimSpace(res.out))
	}
	d.fig.reloadsBad.Add(1)
	if err := writeAtomic(d.cfgFile, good); err != nil {
		d.fatalf("writing the config: %v", err)
		return
	}
	if res, ok := d.ctl("reload"); ok && res.code != 0 {
		d.failf("", "supervisectl reload of a good config: exit %d: %s", res.code, strings.TrimSpace(res.out))
	}
	d.fig.reloadsCtl.Add(1)
}

// pickN picks up to n distinct items of list at random.
func pickN(r *rand.Rand, list []string, n int) []string {
	if n > len(list) {
		n = len(list)
	}
	idx := r.Perm(len(list))[:n]
	out := make([]string, n)
	for i, j := range idx {
		out[i] = list[j]
	}
	return out
}

// notReady says whether a start or restart failed only because a program
// did not become ready: it crashed, is crash-looping, or took too long.
func notReady(out string) bool {
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.Contains(l, "did not start") && !strings.Contains(l, "did not come back ready") &&
			!strings.Contains(l, "not ready within") && !strings.Contains(l, "keep their old processes") {
			return false
		}
	}
	return true
}
