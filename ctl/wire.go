package ctl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/supervise-dev/supervise/internal/unixsig"
	"github.com/supervise-dev/supervise/logs"
)

// apiVersion prefixes every path; a new incompatible protocol gets /v2/.
const apiVersion = "/v1/"

// Limits on what a request may carry.
const (
	maxBodyBytes = 1 << 20
	maxNames     = 4096
	maxNameBytes = 256
)

// Error codes of the protocol: the category of an error reply, translated
// once here and once in the client (containerd errdefs style).
const (
	codeBadRequest       = "bad_request"
	codeUnknownVerb      = "unknown_verb"
	codeMethodNotAllowed = "method_not_allowed"
	codeTooLarge         = "too_large"
	codeForbidden        = "forbidden"
	codeUnknownProgram   = "unknown_program"
	codeUnavailable      = "unavailable"
	codeFailed           = "failed"
)

// verbSpec says how one verb travels.
type verbSpec struct {
	method    string
	needNames bool     // POST verbs that act on programs
	query     []string // the query keys a GET verb accepts
}

var verbs = map[string]verbSpec{
	"status":   {method: http.MethodGet, query: []string{"name"}},
	"start":    {method: http.MethodPost, needNames: true},
	"stop":     {method: http.MethodPost, needNames: true},
	"restart":  {method: http.MethodPost, needNames: true},
	"scale":    {method: http.MethodPost},
	"signal":   {method: http.MethodPost, needNames: true},
	"logs":     {method: http.MethodGet, query: []string{"name", "n", "follow"}},
	"events":   {method: http.MethodGet, query: []string{"follow"}},
	"reload":   {method: http.MethodPost},
	"shutdown": {method: http.MethodPost},
}

func verbList() string {
	names := make([]string, 0, len(verbs))
	for v := range verbs {
		names = append(names, v)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// request is one decoded control request: what the client asked, validated.
type request struct {
	Verb    string
	Names   []string
	Signal  syscall.Signal // signal
	N       int            // logs: lines of history, -1 for all
	Follow  bool           // logs, events
	Restart RestartOptions // restart
	Stop    StopOptions    // stop
	Wait    WaitOptions    // start, scale
	Counts  map[string]int // scale: instances per program
}

// namesBody and signalBody are the JSON bodies of the POST verbs.
type namesBody struct {
	Names     []string `json:"names"`
	AllAtOnce bool     `json:"all_at_once,omitempty"` // restart only
	Wait      *bool    `json:"wait,omitempty"`        // start and restart; default true
	TimeoutMs int64    `json:"timeout_ms,omitempty"`  // start and restart
	// WithDependents: stop and restart take what depends on the programs
	// down first and bring it back after.
	WithDependents bool `json:"with_dependents,omitempty"`
}

// scaleBody is scale's body: {"counts": {"web": 3}}.
type scaleBody struct {
	Counts    map[string]int `json:"counts"`
	Wait      *bool          `json:"wait,omitempty"` // default true
	TimeoutMs int64          `json:"timeout_ms,omitempty"`
}

type signalBody struct {
	Signal string   `json:"signal"`
	Names  []string `json:"names"`
}

// okReply is the reply of a verb that returns nothing else.
type okReply struct {
	OK bool `json:"ok"`
}

// errorReply is the body of every error reply.
type errorReply struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

// logLine is logs.Line on the wire.
type logLine struct {
	Program string    `json:"program"`
	Stream  string    `json:"stream"`
	Time    time.Time `json:"time"`
	Text    string    `json:"text"`
	Partial bool      `json:"partial,omitempty"`
}

func toWire(l logs.Line) logLine {
	return logLine{Program: l.Program, Stream: l.Stream, Time: l.Time, Text: l.Text, Partial: l.Partial}
}

func (l logLine) line() logs.Line {
	return logs.Line{Program: l.Program, Stream: l.Stream, Time: l.Time, Text: l.Text, Partial: l.Partial}
}

// apiError is an error reply the server sends: a status, a code, a message.
type apiError struct {
	Status int
	Code   string
	Msg    string
}

func (e *apiError) Error() string { return e.Msg }

func badRequest(format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: codeBadRequest, Msg: fmt.Sprintf(format, args...)}
}

// unrouted is the error reply to a request no route takes: a path outside
// the protocol, an unknown verb, or a verb with the wrong method.
func unrouted(r *http.Request) *apiError {
	path := r.URL.Path
	verb, ok := strings.CutPrefix(path, apiVersion)
	if !ok {
		return &apiError{Status: http.StatusNotFound, Code: codeUnknownVerb,
			Msg: fmt.Sprintf("unknown path %q: this supervise speaks %s<verb>", path, apiVersion)}
	}
	spec, ok := verbs[verb]
	if !ok {
		return &apiError{Status: http.StatusNotFound, Code: codeUnknownVerb,
			Msg: fmt.Sprintf("unknown verb %q (known: %s)", verb, verbList())}
	}
	return &apiError{Status: http.StatusMethodNotAllowed, Code: codeMethodNotAllowed,
		Msg: fmt.Sprintf("%s wants %s, not %s", verb, spec.method, r.Method)}
}

// decodeRequest turns the HTTP request the router gave to verb into a
// validated request. It reads at most maxBodyBytes+1 bytes of the body;
// every failure is a 4xx apiError.
func decodeRequest(verb string, r *http.Request) (request, *apiError) {
	spec := verbs[verb]
	req := request{Verb: verb, N: -1}
	if spec.method == http.MethodGet {
		return req, decodeQuery(&req, r.URL.RawQuery, spec.query)
	}
	if r.URL.RawQuery != "" {
		return request{}, badRequest("%s takes its arguments in the body, not the query", verb)
	}
	body, aerr := readBody(r)
	if aerr != nil {
		return request{}, aerr
	}
	switch verb {
	case "signal":
		var b signalBody
		if err := decodeJSON(body, &b); err != nil {
			return request{}, badRequest("decoding %s request: %v", verb, err)
		}
		if b.Signal == "" {
			return request{}, badRequest("signal: no signal given")
		}
		sig, err := unixsig.Parse(b.Signal)
		if err != nil {
			return request{}, badRequest("signal: %v", err)
		}
		req.Signal, req.Names = sig, b.Names
	case "start", "stop", "restart":
		var b namesBody
		if err := decodeJSON(body, &b); err != nil {
			return request{}, badRequest("decoding %s request: %v", verb, err)
		}
		req.Names = b.Names
		switch {
		case verb != "restart" && b.AllAtOnce:
			return request{}, badRequest("%s: all_at_once is restart's", verb)
		case verb == "stop" && (b.Wait != nil || b.TimeoutMs != 0):
			return request{}, badRequest("stop: wait and timeout_ms are start's and restart's (a stop always waits)")
		case verb == "start" && b.WithDependents:
			return request{}, badRequest("start: with_dependents is stop's and restart's (a start brings back what waits for it)")
		}
		w, aerr := waitOptions(verb, b.Wait, b.TimeoutMs)
		if aerr != nil {
			return request{}, aerr
		}
		req.Wait = w
		req.Restart = RestartOptions{AllAtOnce: b.AllAtOnce, NoWait: w.NoWait, Timeout: w.Timeout, WithDependents: b.WithDependents}
		if verb == "stop" {
			req.Stop = StopOptions{WithDependents: b.WithDependents}
		}
	case "scale":
		var b scaleBody
		if err := decodeJSON(body, &b); err != nil {
			return request{}, badRequest("decoding %s request: %v", verb, err)
		}
		if aerr := checkCounts(b.Counts); aerr != nil {
			return request{}, aerr
		}
		w, aerr := waitOptions(verb, b.Wait, b.TimeoutMs)
		if aerr != nil {
			return request{}, aerr
		}
		req.Counts, req.Wait = b.Counts, w
	default: // reload, shutdown: nothing, or {}
		if len(bytes.TrimSpace(body)) > 0 {
			if err := decodeJSON(body, &struct{}{}); err != nil {
				return request{}, badRequest("decoding %s request: %v", verb, err)
			}
		}
	}
	if spec.needNames && len(req.Names) == 0 {
		return request{}, badRequest("%s: name at least one program (or \"all\")", verb)
	}
	if err := checkNames(req.Names); err != nil {
		return request{}, err
	}
	return req, nil
}

// maxInstances is the most instances scale may ask of one program, as a
// config's instances.
const maxInstances = 10000

// waitOptions reads the wait and timeout_ms of a body.
func waitOptions(verb string, wait *bool, timeoutMs int64) (WaitOptions, *apiError) {
	if timeoutMs < 0 || timeoutMs > int64(24*time.Hour/time.Millisecond) {
		return WaitOptions{}, badRequest("%s: timeout_ms must be between 0 and a day", verb)
	}
	return WaitOptions{NoWait: wait != nil && !*wait, Timeout: time.Duration(timeoutMs) * time.Millisecond}, nil
}

// checkCounts checks scale's counts: at least one program, names as any
// verb's, no instance names, 0 to maxInstances each.
func checkCounts(counts map[string]int) *apiError {
	if len(counts) == 0 {
		return badRequest(`scale: name at least one program and its instances, like {"web": 3}`)
	}
	if len(counts) > maxNames {
		return badRequest("scale: %d programs: at most %d", len(counts), maxNames)
	}
	for name, n := range counts {
		if err := checkName(name); err != nil {
			return badRequest("scale: %v", err)
		}
		if strings.Contains(name, ":") || name == "all" {
			return badRequest("scale: %q: name a program, not an instance or \"all\"", name)
		}
		if n < 0 || n > maxInstances {
			return badRequest("scale: %s=%d: instances must be between 0 and %d", name, n, maxInstances)
		}
	}
	return nil
}

func decodeQuery(req *request, raw string, allowed []string) *apiError {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return badRequest("%s: bad query: %v", req.Verb, err)
	}
	for k, vs := range q {
		if !slices.Contains(allowed, k) {
			return badRequest("%s: unknown parameter %q", req.Verb, k)
		}
		if k != "name" && len(vs) > 1 {
			return badRequest("%s: parameter %q given %d times", req.Verb, k, len(vs))
		}
	}
	req.Names = q["name"]
	if err := checkNames(req.Names); err != nil {
		return err
	}
	if vs, ok := q["n"]; ok {
		n, err := strconv.Atoi(vs[0])
		if err != nil {
			return badRequest("%s: n=%q is not a number", req.Verb, vs[0])
		}
		req.N = max(n, -1)
	}
	if vs, ok := q["follow"]; ok {
		if vs[0] == "" {
			req.Follow = true
		} else if req.Follow, err = strconv.ParseBool(vs[0]); err != nil {
			return badRequest("%s: follow=%q is not a boolean", req.Verb, vs[0])
		}
	}
	return nil
}

func readBody(r *http.Request) ([]byte, *apiError) {
	tooLarge := &apiError{Status: http.StatusRequestEntityTooLarge, Code: codeTooLarge,
		Msg: fmt.Sprintf("request body larger than %d bytes", maxBodyBytes)}
	if r.ContentLength > maxBodyBytes {
		return nil, tooLarge
	}
	if r.Body == nil {
		return nil, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge
		}
		return nil, badRequest("reading request body: %v", err)
	}
	if len(body) > maxBodyBytes {
		return nil, tooLarge
	}
	return body, nil
}

// decodeJSON decodes exactly one JSON value, refusing unknown fields and
// anything after the value.
func decodeJSON(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return errors.New("empty body")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the JSON value")
	}
	return nil
}

func checkNames(names []string) *apiError {
	if len(names) > maxNames {
		return badRequest("%d names: at most %d", len(names), maxNames)
	}
	for _, n := range names {
		if err := checkName(n); err != nil {
			return badRequest("%v", err)
		}
	}
	return nil
}

func checkName(n string) error {
	switch {
	case n == "":
		return errors.New("empty program name")
	case len(n) > maxNameBytes:
		return fmt.Errorf("program name of %d bytes: at most %d", len(n), maxNameBytes)
	case !utf8.ValidString(n):
		return fmt.Errorf("program name %q is not UTF-8", n)
	case strings.ContainsFunc(n, unicode.IsControl):
		return fmt.Errorf("program name %q has a control character", n)
	}
	return nil
}

// httpRequest encodes req the way decodeRequest reads it; the client sends
// this and the fuzz test checks the round trip.
func (req request) httpRequest(ctx context.Context) (*http.Request, error) {
	spec, ok := verbs[req.Verb]
	if !ok {
		return nil, fmt.Errorf("unknown verb %q", req.Verb)
	}
	u := &url.URL{Scheme: "http", Host: "supervise", Path: apiVersion + req.Verb}
	if spec.method == http.MethodGet {
		q := url.Values{}
		for _, n := range req.Names {
			q.Add("name", n)
		}
		if req.Verb == "logs" && req.N >= 0 {
			q.Set("n", strconv.Itoa(req.N))
		}
		if req.Follow {
			q.Set("follow", "1")
		}
		u.RawQuery = q.Encode()
		return http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	}
	var body any
	switch req.Verb {
	case "signal":
		body = signalBody{Signal: unixsig.Name(req.Signal), Names: req.Names}
	case "stop":
		body = namesBody{Names: req.Names, WithDependents: req.Stop.WithDependents}
	case "start":
		b := namesBody{Names: req.Names, TimeoutMs: req.Wait.Timeout.Milliseconds()}
		if req.Wait.NoWait {
			b.Wait = new(bool)
		}
		body = b
	case "restart":
		b := namesBody{Names: req.Names, AllAtOnce: req.Restart.AllAtOnce, TimeoutMs: req.Restart.Timeout.Milliseconds(), WithDependents: req.Restart.WithDependents}
		if req.Restart.NoWait {
			b.Wait = new(bool)
		}
		body = b
	case "scale":
		b := scaleBody{Counts: req.Counts, TimeoutMs: req.Wait.Timeout.Milliseconds()}
		if req.Wait.NoWait {
			b.Wait = new(bool)
		}
		body = b
	default:
		body = struct{}{}
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/json")
	return hr, nil
}
