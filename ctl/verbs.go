package ctl

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/supervise-dev/supervise/internal/unixsig"
	"github.com/supervise-dev/supervise/logs"
)

// The control verbs, one row each: the verb's name and method (its route is
// "METHOD /v1/NAME"), its arguments as a type of their own (the JSON body
// of a POST verb, the query of a GET verb), which other verbs' fields it
// refuses and why, and the Backend call that serves it. The server's
// routes, the decoding, the client's encoding and the checks of the
// protocol's documentation (verbs_test.go) all read this table.
//
// A new verb is a row here, its arguments type and Client method below,
// a [Backend] method, and its command in supervisectl.
var verbTable = []*verbDef{
	{name: "status", method: http.MethodGet, params: []string{"name"},
		serve: serveArgs(func(s *Server, ctx context.Context, w http.ResponseWriter, a *statusArgs) error {
			st, err := s.cfg.Backend.Status(ctx, a.Names)
			if err == nil {
				s.writeStatus(w, st)
			}
			return err
		})},
	{name: "why", method: http.MethodGet, params: []string{"name"},
		serve: serveArgs(func(s *Server, ctx context.Context, w http.ResponseWriter, a *whyArgs) error {
			ws, err := s.cfg.Backend.Why(ctx, a.Names)
			if err == nil {
				s.writeJSON(w, http.StatusOK, ws)
			}
			return err
		})},
	{name: "start", method: http.MethodPost, needNames: true,
		foreign: []foreignField{allAtOnceIsRestarts("start"), {"with_dependents", "start: with_dependents is stop's and restart's (a start brings back what waits for it)"}},
		serve: ok(func(ctx context.Context, b Backend, a *startArgs) error {
			return b.Start(ctx, a.Names, a.options())
		})},
	{name: "stop", method: http.MethodPost, needNames: true,
		foreign: []foreignField{allAtOnceIsRestarts("stop"), stopAlwaysWaits("wait"), stopAlwaysWaits("timeout_ms")},
		serve: ok(func(ctx context.Context, b Backend, a *stopArgs) error {
			return b.Stop(ctx, a.Names, StopOptions{WithDependents: a.WithDependents})
		})},
	{name: "restart", method: http.MethodPost, needNames: true,
		serve: ok(func(ctx context.Context, b Backend, a *restartArgs) error {
			return b.Restart(ctx, a.Names, a.options())
		})},
	{name: "scale", method: http.MethodPost,
		serve: ok(func(ctx context.Context, b Backend, a *scaleArgs) error {
			return b.Scale(ctx, a.Counts, a.options())
		})},
	{name: "signal", method: http.MethodPost, needNames: true,
		serve: ok(func(ctx context.Context, b Backend, a *signalArgs) error {
			return b.Signal(ctx, a.sig, a.Names)
		})},
	{name: "logs", method: http.MethodGet, params: []string{"name", "n", "follow"},
		serve: serveArgs(func(s *Server, ctx context.Context, w http.ResponseWriter, a *logsArgs) error {
			ch, err := s.cfg.Backend.Logs(ctx, a.Names, a.N, a.Follow)
			if err == nil {
				streamItems(s, ctx, w, "logs", ch, func(l logs.Line) any { return toWire(l) })
			}
			return err
		})},
	{name: "events", method: http.MethodGet, params: []string{"follow"},
		serve: serveArgs(func(s *Server, ctx context.Context, w http.ResponseWriter, a *eventsArgs) error {
			ch, err := s.cfg.Backend.Events(ctx, a.Follow)
			if err == nil {
				streamItems(s, ctx, w, "events", ch, func(ev Event) any { return ev })
			}
			return err
		})},
	{name: "reload", method: http.MethodPost, emptyBody: true,
		serve: ok(func(ctx context.Context, b Backend, _ *noArgs) error { return b.Reload(ctx) })},
	{name: "shutdown", method: http.MethodPost, emptyBody: true,
		serve: ok(func(ctx context.Context, b Backend, _ *noArgs) error { return b.Shutdown(ctx) })},
	{name: "upgrade", method: http.MethodPost, emptyBody: true, serve: serveArgs(serveUpgrade)},
	{name: "version", method: http.MethodGet, serve: serveArgs(serveVersion)},
}

// Fields several verbs refuse with the same words.
func allAtOnceIsRestarts(verb string) foreignField {
	return foreignField{"all_at_once", verb + ": all_at_once is restart's"}
}

func stopAlwaysWaits(field string) foreignField {
	return foreignField{field, "stop: wait and timeout_ms are start's and restart's (a stop always waits)"}
}

// Verbs lists the verbs of the protocol, sorted.
func Verbs() []string {
	names := make([]string, 0, len(verbTable))
	for _, v := range verbTable {
		names = append(names, v.name)
	}
	slices.Sort(names)
	return names
}

// status: GET /v1/status?name=web&name=db; no name is every program.

type statusArgs struct{ programNames }

func (a *statusArgs) fromQuery(q url.Values) *apiError {
	a.Names = q["name"]
	return nil
}

func (a *statusArgs) query() url.Values { return url.Values{"name": a.Names} }

// Status reports the named programs (every program when names is empty).
func (c *Client) Status(ctx context.Context, names []string) ([]ProgramStatus, error) {
	var st []ProgramStatus
	err := c.call(ctx, "status", &statusArgs{programNames{names}}, &st)
	return st, err
}

// why: GET /v1/why?name=web; no name is every program.

type whyArgs struct{ programNames }

func (a *whyArgs) fromQuery(q url.Values) *apiError {
	a.Names = q["name"]
	return nil
}

func (a *whyArgs) query() url.Values { return url.Values{"name": a.Names} }

// Why reports how each named instance (every one when names is empty)
// last ended.
func (c *Client) Why(ctx context.Context, names []string) ([]Why, error) {
	var ws []Why
	err := c.call(ctx, "why", &whyArgs{programNames{names}}, &ws)
	return ws, err
}

// start: POST /v1/start {"names": ["web"], "wait": true, "timeout_ms": 0}.

type startArgs struct {
	programNames
	waitArgs
}

// check: both parts have one; the wait's is the one that checks something.
func (a *startArgs) check(verb string) *apiError { return a.waitArgs.check(verb) }

// Start starts the named programs and, unless opts.NoWait, returns once
// they are ready (or have failed).
func (c *Client) Start(ctx context.Context, names []string, opts WaitOptions) error {
	return c.call(ctx, "start", &startArgs{programNames{names}, waitArgsOf(opts)}, nil)
}

// stop: POST /v1/stop {"names": ["web"], "with_dependents": false}.

type stopArgs struct {
	programNames
	// WithDependents takes what depends on the programs down first.
	WithDependents bool `json:"with_dependents,omitempty"`
}

// Stop stops the named programs and returns once they are down.
func (c *Client) Stop(ctx context.Context, names []string, opts StopOptions) error {
	return c.call(ctx, "stop", &stopArgs{programNames{names}, opts.WithDependents}, nil)
}

// restart: POST /v1/restart {"names": ["web"], "all_at_once": false,
// "wait": true, "timeout_ms": 0, "with_dependents": false}.

type restartArgs struct {
	programNames
	AllAtOnce bool `json:"all_at_once,omitempty"`
	waitArgs
	// WithDependents takes what depends on the programs down first and
	// brings it back after.
	WithDependents bool `json:"with_dependents,omitempty"`
	// Resume: the instances among names whose restart was asked for before
	// an upgrade in place ended the command, with the process each had
	// then; they are only waited for.
	Resume map[string]string `json:"resume,omitempty"`
}

func (a *restartArgs) check(verb string) *apiError {
	if len(a.Resume) > maxNames {
		return badRequest("restart: resume names more than %d instances", maxNames)
	}
	for k, p := range a.Resume {
		if len(k) > maxNameBytes || len(p) > maxNameBytes {
			return badRequest("restart: resume: an instance or process id longer than %d bytes", maxNameBytes)
		}
	}
	return a.waitArgs.check(verb)
}

func (a *restartArgs) options() RestartOptions {
	w := a.waitArgs.options()
	return RestartOptions{AllAtOnce: a.AllAtOnce, NoWait: w.NoWait, Timeout: w.Timeout, WithDependents: a.WithDependents, Resume: a.Resume}
}

// Restart restarts the named programs, clearing their crash backoff. Ended
// by an upgrade in place, it goes on with the new binary from where it
// was: what it asked for already is waited for, not restarted again.
func (c *Client) Restart(ctx context.Context, names []string, opts RestartOptions) error {
	a := &restartArgs{
		programNames:   programNames{names},
		AllAtOnce:      opts.AllAtOnce,
		waitArgs:       waitArgsOf(WaitOptions{NoWait: opts.NoWait, Timeout: opts.Timeout}),
		WithDependents: opts.WithDependents,
		Resume:         opts.Resume,
	}
	for range maxResumes {
		err := c.callOnce(ctx, "restart", a, nil)
		if !isUpgrading(err) {
			return err
		}
		var se *ServerError
		if errors.As(err, &se) && se.Resume != nil {
			// A restart refused before it asked anything has no resume:
			// it is sent again as it was.
			a.Names = append(slices.Clone(se.Resume.Remaining), slices.Sorted(maps.Keys(se.Resume.Asked))...)
			a.Resume = se.Resume.Asked
			if len(a.Names) == 0 {
				return nil
			}
		}
		if err := c.awaitUpgrade(ctx); err != nil {
			return err
		}
	}
	return c.callOnce(ctx, "restart", a, nil)
}

// scale: POST /v1/scale {"counts": {"web": 3}, "wait": true, "timeout_ms": 0}.

type scaleArgs struct {
	Counts map[string]int `json:"counts"`
	waitArgs
}

func (a *scaleArgs) programs() []string { return slices.Sorted(maps.Keys(a.Counts)) }

func (a *scaleArgs) check(verb string) *apiError {
	if aerr := checkCounts(a.Counts); aerr != nil {
		return aerr
	}
	return a.waitArgs.check(verb)
}

// Scale sets the number of instances of each program in counts.
func (c *Client) Scale(ctx context.Context, counts map[string]int, opts WaitOptions) error {
	return c.call(ctx, "scale", &scaleArgs{counts, waitArgsOf(opts)}, nil)
}

// signal: POST /v1/signal {"signal": "HUP", "names": ["web"]}.

type signalArgs struct {
	Signal string `json:"signal"`
	programNames
	sig syscall.Signal // Signal parsed by check
}

func (a *signalArgs) check(verb string) *apiError {
	if a.Signal == "" {
		return badRequest("signal: no signal given")
	}
	sig, err := unixsig.Parse(a.Signal)
	if err != nil {
		return badRequest("signal: %v", err)
	}
	a.sig = sig
	return nil
}

// Signal sends sig to the named programs.
func (c *Client) Signal(ctx context.Context, sig syscall.Signal, names []string) error {
	return c.call(ctx, "signal", &signalArgs{Signal: unixsig.Name(sig), programNames: programNames{names}}, nil)
}

// logs: GET /v1/logs?name=web&n=20&follow=1, a stream of lines.

type logsArgs struct {
	programNames
	N      int // lines of history per program, -1 for all
	Follow bool
}

func (a *logsArgs) fromQuery(q url.Values) *apiError {
	a.Names, a.N = q["name"], -1
	if vs, ok := q["n"]; ok {
		n, err := strconv.Atoi(vs[0])
		if err != nil {
			return badRequest("logs: n=%q is not a number", vs[0])
		}
		a.N = max(n, -1)
	}
	return parseFollow("logs", q, &a.Follow)
}

func (a *logsArgs) query() url.Values {
	q := url.Values{"name": a.Names}
	if a.N >= 0 {
		q.Set("n", strconv.Itoa(a.N))
	}
	setFollow(q, a.Follow)
	return q
}

func (a *logsArgs) following() bool { return a.Follow }

// Logs calls fn with the last n lines (all when n < 0) of the named
// programs, then with follow every new line until ctx ends (it then
// returns ctx.Err()). An error from fn stops the stream and is returned.
//
// An upgrade in place does not end it: it goes on with the new binary,
// each line once (see cursor).
func (c *Client) Logs(ctx context.Context, names []string, n int, follow bool, fn func(logs.Line) error) error {
	a := &logsArgs{programNames{names}, max(n, -1), follow}
	cur, since := newCursor(), time.Now()
	return followOn(c, ctx, func() error {
		return stream(c, ctx, "logs", a, func(l logLine) error {
			if !cur.pass(l.Program, l.Time) {
				return nil
			}
			return fn(l.line())
		})
	}, func() {
		// Lines of a program not seen yet came after the first request,
		// unless that asked for the whole history.
		floor := since
		if a.N != 0 {
			floor = time.Time{}
		}
		cur.resume(floor)
		a.N = -1
	})
}

// events: GET /v1/events?follow=1, a stream of Event.

type eventsArgs struct {
	noNames
	Follow bool
}

func (a *eventsArgs) fromQuery(q url.Values) *apiError { return parseFollow("events", q, &a.Follow) }

func (a *eventsArgs) query() url.Values {
	q := url.Values{}
	setFollow(q, a.Follow)
	return q
}

func (a *eventsArgs) following() bool { return a.Follow }

// Events calls fn with the recent state changes, then with follow every new
// one until ctx ends (it then returns ctx.Err()).
// Like Logs, it goes on through an upgrade in place, each event once.
func (c *Client) Events(ctx context.Context, follow bool, fn func(Event) error) error {
	cur := newCursor()
	return followOn(c, ctx, func() error {
		return stream(c, ctx, "events", &eventsArgs{Follow: follow}, func(ev Event) error {
			if !cur.pass("", ev.Time) {
				return nil
			}
			return fn(ev)
		})
	}, func() { cur.resume(time.Time{}) })
}

// reload and shutdown: POST with no body, or {}.

// Reload makes the supervisor re-read its config.
func (c *Client) Reload(ctx context.Context) error { return c.call(ctx, "reload", &noArgs{}, nil) }

// Shutdown makes the supervisor stop everything and exit.
func (c *Client) Shutdown(ctx context.Context) error { return c.call(ctx, "shutdown", &noArgs{}, nil) }

// Parts the arguments of several verbs share.

// programNames is the programs a verb names: "names" in a JSON body,
// "name" (once per program) in a query.
type programNames struct {
	Names []string `json:"names"`
}

func (p *programNames) programs() []string     { return p.Names }
func (p *programNames) check(string) *apiError { return nil }

// noNames is the arguments of a verb that names no program.
type noNames struct{}

func (noNames) programs() []string     { return nil }
func (noNames) check(string) *apiError { return nil }

// noArgs is the body of a verb that takes nothing: empty, or {}.
type noArgs struct{ noNames }

// waitArgs is how long start, restart and scale wait for what they asked.
type waitArgs struct {
	Wait      *bool `json:"wait,omitempty"`       // default true
	TimeoutMs int64 `json:"timeout_ms,omitempty"` // 0: the program's rollout timeout
}

func waitArgsOf(o WaitOptions) waitArgs {
	w := waitArgs{TimeoutMs: o.Timeout.Milliseconds()}
	if o.NoWait {
		w.Wait = new(bool)
	}
	return w
}

func (w *waitArgs) options() WaitOptions {
	return WaitOptions{NoWait: w.Wait != nil && !*w.Wait, Timeout: time.Duration(w.TimeoutMs) * time.Millisecond}
}

func (w *waitArgs) check(verb string) *apiError {
	if w.TimeoutMs < 0 || w.TimeoutMs > int64(24*time.Hour/time.Millisecond) {
		return badRequest("%s: timeout_ms must be between 0 and a day", verb)
	}
	return nil
}

func parseFollow(verb string, q url.Values, follow *bool) *apiError {
	vs, ok := q["follow"]
	if !ok {
		return nil
	}
	if vs[0] == "" {
		*follow = true
		return nil
	}
	f, err := strconv.ParseBool(vs[0])
	if err != nil {
		return badRequest("%s: follow=%q is not a boolean", verb, vs[0])
	}
	*follow = f
	return nil
}

func setFollow(q url.Values, follow bool) {
	if follow {
		q.Set("follow", "1")
	}
}
