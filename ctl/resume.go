package ctl

import (
	"context"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Commands under way at an upgrade in place (a restart waiting for
// readiness, a stop, a followed stream) would lose their connection with
// the exec. Instead the server ends each of them first, saying why: a
// reply of code "upgrading" (503), or for a stream its end with the
// trailer Supervise-Upgrading. The client then waits for the new binary
// to answer and carries on where it was. A connection that merely breaks
// is still an error.

// ErrUpgrading is the cause of a command ended for an upgrade in place,
// and what a backend returns for a request it refuses while one is under
// way: the client tries again once the new binary answers.
var ErrUpgrading = errors.New("an upgrade in place is under way; try again")

// upgradeTrailer ends a stream cut short for an upgrade in place.
const upgradeTrailer = "Supervise-Upgrading"

// Bounds of a client's wait for the new binary and of its resumes.
const (
	upgradeAnswerWait = 2 * time.Minute
	upgradePoll       = 50 * time.Millisecond
	maxResumes        = 20 // upgrades in a row that one command goes through
)

// UpgradeInterrupted is a backend's error for a command that an upgrade
// ended where resuming it is not doing it again: a restart whose
// processes were asked for already must not be restarted twice.
type UpgradeInterrupted struct {
	Restart *RestartResume
}

func (e *UpgradeInterrupted) Error() string { return ErrUpgrading.Error() }
func (e *UpgradeInterrupted) Unwrap() error { return ErrUpgrading }

// RestartResume is how far a restart got: the instances it asked a new
// process of (with the process each had then), which are only waited
// for, and those it had not come to yet, restarted on resume.
type RestartResume struct {
	Asked     map[string]string `json:"asked,omitempty"`
	Remaining []string          `json:"remaining,omitempty"`
}

// EndCommandsForUpgrade ends every command under way (but the upgrade
// itself) with ErrUpgrading as cause, answers later ones "upgrading",
// stops accepting connections (the backlog is the new binary's), and
// waits, up to wait, until their replies have left: the handlers have
// returned, and on the socket every connection but the upgrade's has
// finished its response (net/http writes a stream's trailer after the
// handler returns) and none accepted is left unread. The exec comes
// next. ResumeCommands undoes it when the exec did not happen.
func (s *Server) EndCommandsForUpgrade(ctx context.Context, wait time.Duration) {
	s.mu.Lock()
	s.upgrading = true
	cancel, gates := s.upCancel, s.gatesLocked()
	s.mu.Unlock()
	if cancel != nil {
		cancel(ErrUpgrading)
	}
	deadline := time.Now().Add(wait)
	// No connection is taken from now on: those not accepted yet wait in
	// the backlog for the new binary.
	parked := true
	for _, g := range gates {
		parked = g.pause(deadline) && parked
	}
	for {
		commands, conns := s.leftForUpgrade()
		if parked && len(commands)+len(conns) == 0 || ctx.Err() != nil {
			return // done, or the upgrade is given up (ResumeCommands follows)
		}
		if time.Now().After(deadline) {
			// Which: a command is the backend not answering its cancel; a
			// connection alone is a reply that has not left, or a request
			// not read yet ("new": a client that connected and has not
			// written, or not been read, within the wait).
			s.log.Warn("control socket: commands did not end before the upgrade; their connections drop",
				"wait", wait, "commands", commands, "connections", conns, "accepting_stopped", parked)
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// leftForUpgrade names what EndCommandsForUpgrade waits for: the verbs of
// the commands under way, and of the connections (but the upgrade's) with
// a request under way ("?" before it is routed) or none read yet ("new").
func (s *Server) leftForUpgrade() (commands, conns []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for verb, n := range s.inflight {
		for range n {
			commands = append(commands, verb)
		}
	}
	for c, verb := range s.busy {
		if c != s.upgradeConn {
			conns = append(conns, verb)
		}
	}
	slices.Sort(commands)
	slices.Sort(conns)
	return commands, conns
}

// connState tracks the socket's connections with a request under way.
func (s *Server) connState(c net.Conn, st http.ConnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch st {
	case http.StateNew, http.StateActive:
		// A new connection is waited for too: its request, once read, is
		// answered "upgrading"; the exec would cut it unanswered.
		if s.busy == nil {
			s.busy = map[net.Conn]string{}
		}
		verb := "?" // a request under way, not routed yet
		if st == http.StateNew {
			verb = "new"
		}
		s.busy[c] = verb
		return
	}
	delete(s.busy, c)
	if c == s.upgradeConn {
		s.upgradeConn = nil
	}
}

// routed names the verb that r, under way on its connection, asked.
func (s *Server) routed(r *http.Request, verb string) {
	c, ok := r.Context().Value(connKey{}).(net.Conn)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, busy := s.busy[c]; busy {
		s.busy[c] = verb
	}
}

// ResumeCommands serves commands again after EndCommandsForUpgrade, when
// the exec failed.
func (s *Server) ResumeCommands() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.upgrading = false
	s.upCtx, s.upCancel = context.WithCancelCause(context.Background())
	for _, g := range s.gatesLocked() {
		g.resume()
	}
}

// gatesLocked is every listener an upgrade pauses.
func (s *Server) gatesLocked() []*acceptGate {
	gates := slices.Clone(s.others)
	if s.gate != nil {
		gates = append(gates, s.gate)
	}
	return gates
}

// TrackListener makes another listener, one that serves VerbHandler (the
// HTTP listener), part of an upgrade's wait before the exec, as the
// socket is: the listener returned stops accepting with the socket (one
// that cannot be given a deadline is returned as it is), and connState,
// called from its http.Server's ConnState, counts its connections with
// a request under way or not read yet. A stream's trailer, written after
// its handler returned, so leaves before the exec.
func (s *Server) TrackListener(ln net.Listener) (tracked net.Listener, connState func(net.Conn, http.ConnState)) {
	tracked = ln
	if dl, ok := ln.(deadlineListener); ok {
		g := newAcceptGate(dl)
		s.mu.Lock()
		s.others = append(s.others, g)
		s.mu.Unlock()
		tracked = g
	}
	return tracked, s.connState
}

// enterCommand counts a command in and returns the context that ends with
// an upgrade, or false while one is under way.
func (s *Server) enterCommand(verb string) (context.Context, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.upgrading {
		return nil, false
	}
	if s.upCtx == nil {
		s.upCtx, s.upCancel = context.WithCancelCause(context.Background())
	}
	if s.inflight == nil {
		s.inflight = map[string]int{}
	}
	s.inflight[verb]++
	return s.upCtx, true
}

func (s *Server) leaveCommand(verb string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inflight[verb]--; s.inflight[verb] == 0 {
		delete(s.inflight, verb)
	}
}

var upgradingReply = &apiError{Status: http.StatusServiceUnavailable, Code: codeUpgrading, Msg: ErrUpgrading.Error()}

// upgradingError is the reply to a command ended by an upgrade: err's
// resume, if it has one.
func upgradingError(err error) *apiError {
	var ui *UpgradeInterrupted
	if errors.As(err, &ui) && ui.Restart != nil {
		return &apiError{Status: upgradingReply.Status, Code: codeUpgrading, Msg: upgradingReply.Msg, Resume: ui.Restart}
	}
	return upgradingReply
}

// isUpgrading says that a command was ended, or refused, for an upgrade.
func isUpgrading(err error) bool {
	var se *ServerError
	return errors.As(err, &se) && se.Code == codeUpgrading || errors.Is(err, errStreamUpgrading)
}

var errStreamUpgrading = errors.New("the stream ended for an upgrade in place")

// awaitUpgrade waits until a supervisor answers again (the new binary, or
// the old one when the exec failed), bounded by upgradeAnswerWait.
func (c *Client) awaitUpgrade(parent context.Context) error {
	ctx, cancel := context.WithTimeout(parent, upgradeAnswerWait)
	defer cancel()
	for {
		var v VersionInfo
		err := c.callOnce(ctx, "version", &versionArgs{}, &v)
		var se *ServerError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &se) && se.Code != codeUpgrading && se.Code != codeUnavailable:
			return nil // it answers (without the version verb, say)
		}
		select {
		case <-ctx.Done():
			if parent.Err() != nil {
				return parent.Err()
			}
			return &UnreachableError{Socket: c.path, Err: errors.New("no supervisor answered after an upgrade in place: " + strings.TrimSpace(err.Error()))}
		case <-time.After(upgradePoll):
		}
	}
}

// cursor is where a stream (of lines or events) got to, per source (a
// program's lines, or the events): the latest time seen and how many
// items bore it. The protocol has no sequence numbers; the times do, as
// an upgrade in place hands the recent lines and events over with theirs.
// A stream resumed with the new binary asks for its history again and
// passes what the cursor says was seen.
type cursor struct {
	latest map[string]time.Time
	count  map[string]int // items delivered at latest
	// Since the resume: items at latest passed over, and the sources
	// caught up (a new item delivered: nothing more to pass over).
	skipped map[string]int
	caught  map[string]bool
	replay  bool
	// floor: a source never seen before the resume starts at this time
	// (a stream asked for without history); zero to take all its history.
	floor time.Time
}

func newCursor() *cursor {
	return &cursor{latest: map[string]time.Time{}, count: map[string]int{}, skipped: map[string]int{}, caught: map[string]bool{}}
}

// pass says whether the item of source at t is new, and records it.
func (c *cursor) pass(source string, t time.Time) bool {
	last, ok := c.latest[source]
	if c.replay && !c.caught[source] {
		switch {
		case !ok && t.Before(c.floor):
			return false
		case ok && t.Before(last):
			return false
		case ok && t.Equal(last) && c.skipped[source] < c.count[source]:
			c.skipped[source]++
			return false
		}
		c.caught[source] = true
	}
	if !ok || t.After(last) {
		c.latest[source], c.count[source] = t, 1
	} else if t.Equal(last) {
		c.count[source]++
	}
	return true
}

// resume starts a replay of the history; floor is for unseen sources.
func (c *cursor) resume(floor time.Time) {
	c.replay, c.floor = true, floor
	clear(c.skipped)
	clear(c.caught)
}

// followOn runs one stream with fn, and while an upgrade in place ends it,
// waits for the new binary and runs it again with again (the history to
// be replayed), passing what cur says was seen.
func followOn(c *Client, ctx context.Context, run func() error, again func()) error {
	for range maxResumes {
		err := run()
		if !isUpgrading(err) {
			return err
		}
		if err := c.awaitUpgrade(ctx); err != nil {
			return err
		}
		again()
	}
	return run()
}
