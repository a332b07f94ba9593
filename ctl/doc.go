// Package ctl is the control protocol of supervise: a server that exposes a
// running supervisor on a unix socket, and the client supervisectl uses.
//
// The contract:
//
//   - The supervisor implements [Backend]; ctl never imports the supervisor.
//     ctl passes program names through untouched ("all" included): the
//     backend resolves them and wraps [ErrUnknownProgram] for a name it does
//     not know.
//   - [Server.Listen] creates the socket (mode 0600, or 0660 and the
//     configured group when one is set). It is created in a private directory
//     and hard-linked into place, so it is never reachable with wider
//     permissions and never replaces a file that appeared meanwhile. A stale
//     socket (connect refused) is replaced; a live one is never stolen
//     ([ErrAlreadyRunning]).
//   - Every connection is identified with SO_PEERCRED when it is accepted.
//     Root, the server's own uid and members of the configured group are
//     admitted; anybody else gets 403 and the server carries on.
//   - [Server.Serve] returns only after every handler has returned; a
//     streaming handler ends when its client goes away or Serve's context
//     ends, and cancels the context it handed to the backend.
//   - [Client] methods block until the reply is complete (or, for a
//     following stream, until ctx ends). A supervisor that cannot be reached
//     is an [*UnreachableError]; an error reply is a [*ServerError] that
//     matches the sentinels with errors.Is.
//
// # Protocol
//
// HTTP/1.1 over the unix socket; every path is versioned under /v1/ and
// routed by an http.ServeMux pattern per verb ("POST /v1/start"); what no
// pattern takes gets the protocol's JSON error (404 unknown_verb, or 405
// method_not_allowed with Allow). Bodies
// are JSON; a request body may not exceed 1 MiB and must not carry unknown
// fields. Errors are {"error": "message", "code": "unknown_program"} with a
// 4xx or 5xx status. Streams are newline-delimited JSON, one object per line,
// flushed per item.
//
//	GET  /v1/status?name=web&name=db     → [ProgramStatus, …]   (no name: every program)
//	GET  /v1/why?name=web                → [Why, …]             (no name: every program)
//	POST /v1/start    {"names": ["web"], "wait": true, "timeout_ms": 0} → {"ok": true}
//	POST /v1/stop     {"names": ["web"], "with_dependents": false} → {"ok": true}
//	POST /v1/restart  {"names": ["web"], "all_at_once": false, "wait": true, "timeout_ms": 0, "with_dependents": false, "resume": {}} → {"ok": true}
//	POST /v1/scale    {"counts": {"web": 3}, "wait": true, "timeout_ms": 0} → {"ok": true}
//	POST /v1/signal   {"signal": "HUP", "names": ["web"]} → {"ok": true}
//	GET  /v1/logs?name=web&n=20&follow=1 → stream of {"program","stream","time","text","partial"}
//	GET  /v1/events?follow=1             → stream of Event
//	POST /v1/reload                      → {"ok": true}
//	POST /v1/shutdown                    → {"ok": true}
//	POST /v1/upgrade                     → {"from", "pid", "generation"}, then the exec
//	GET  /v1/version                     → {"version", "pid", "exe", "upgrades"}
//
// wait (default true) makes start, restart and scale reply once what they
// asked for is ready or has failed; timeout_ms (0: the program's rollout
// timeout) bounds the wait for each instance. stop always waits.
// with_dependents takes what depends on the programs down first (and, for
// restart, brings it back after). Another verb's field at its zero value
// is let through; any other value is refused with why.
//
// An upgrade in place (the upgrade verb) ends every command under way
// before the exec, saying so: a 503 reply of code "upgrading", or for a
// stream its end with the trailer Supervise-Upgrading: 1. The client waits
// until a supervisor answers version again and goes on: a command is sent
// again (they do the same twice), but a restart, whose reply carries
// "resume": {"asked": {"web": "PROC"}, "remaining": ["web.2"]} and which
// is sent again with the instances it asked a new process of in "resume",
// to be waited for and not restarted twice; a stream asks for its history
// again and passes over what it showed (the latest time it saw, per
// program). A connection that just breaks stays an error.
//
// The verbs are one table, verbTable in verbs.go: a row gives a verb's
// method, its arguments type (the body or the query above) and the
// [Backend] call that serves it. The routes, the decoding, the client's
// encoding and a test of this table against it all derive from it.
//
// # Socket path
//
// [DefaultSocketPath] picks, in order: $SUPERVISE_SOCKET;
// $XDG_RUNTIME_DIR/supervise.sock; /run/supervise.sock for root;
// /tmp/supervise-<uid>/supervise.sock otherwise, in a directory the server
// makes 0700 and refuses to use when another user made it. Server and
// client resolve it the same way, so they agree when they run as the same
// user with the same environment; otherwise pass the path explicitly
// (--socket).
//
// A dev runner (a Procfile, or `supervise` run in a folder without naming
// a file) has its own socket per project folder, [ProjectSocketPath]:
// NAME-HASH.sock in $XDG_RUNTIME_DIR/supervise, /run/supervise/ctl for root,
// or the private /tmp/supervise-<uid>. The client, given no socket, uses
// [FindProjectSocket] from its working directory upwards first.
//
// # Trust
//
// The server admits root, its own uid and the members of its socket group,
// as SO_PEERCRED says. The client checks the other way round: a listener
// running as anyone but root or the client's own uid (or a uid given with
// [TrustServerUID]) is refused with an [*UntrustedServerError], so a
// process that squats the socket path cannot pose as the supervisor.
package ctl
