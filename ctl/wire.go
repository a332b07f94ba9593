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
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

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
	codeUpgrading        = "upgrading" // ended or refused for an upgrade in place: try again
	codeFailed           = "failed"
)

// verbDef is one row of verbTable: what the server, the client and the
// docs need of a verb.
type verbDef struct {
	name   string
	method string   // GET verbs read, POST verbs act
	params []string // the query parameters of a GET verb
	// needNames: the verb acts on programs and must name one.
	needNames bool
	// emptyBody: the verb takes nothing; an empty body stands for {}.
	emptyBody bool
	// foreign lists other verbs' fields this verb refuses, with why.
	foreign []foreignField
	serve   handler
}

// foreignField is another verb's field in a body: its zero value passes
// (a client may fill in every field it knows), any other is refused with why.
type foreignField struct{ field, why string }

// args is one verb's arguments: the JSON body of a POST verb, or what the
// query of a GET verb carries.
type args interface {
	// check validates the decoded arguments of verb.
	check(verb string) *apiError
	// programs names the programs the request is about.
	programs() []string
}

// queryArgs is the arguments of a GET verb.
type queryArgs interface {
	args
	// fromQuery reads the query; its keys are known and given once each
	// (but "name"), and the names are checked.
	fromQuery(q url.Values) *apiError
	query() url.Values
}

// follower is the arguments of a verb that may follow a stream.
type follower interface{ following() bool }

// handler is a verb's typed half: a fresh value of its arguments, and what
// carries them out. run returns an error for the error reply, or nil once
// it has written its own reply.
type handler struct {
	newArgs func() args
	run     func(s *Server, ctx context.Context, w http.ResponseWriter, a args) error
}

// argsOf is a pointer to a verb's arguments type.
type argsOf[A any] interface {
	*A
	args
}

// serveArgs is the handler of a verb that writes its own reply.
func serveArgs[A any, P argsOf[A]](fn func(s *Server, ctx context.Context, w http.ResponseWriter, a P) error) handler {
	return handler{
		newArgs: func() args { return P(new(A)) },
		run: func(s *Server, ctx context.Context, w http.ResponseWriter, a args) error {
			return fn(s, ctx, w, a.(P))
		},
	}
}

// ok is the handler of a verb that replies {"ok": true} once call returns.
func ok[A any, P argsOf[A]](call func(ctx context.Context, b Backend, a P) error) handler {
	return serveArgs(func(s *Server, ctx context.Context, w http.ResponseWriter, a P) error {
		if err := call(ctx, s.cfg.Backend, a); err != nil {
			return err
		}
		s.writeJSON(w, http.StatusOK, okReply{OK: true})
		return nil
	})
}

// verbNamed is the row of the verb called name.
var verbNamed = func() map[string]*verbDef {
	m := make(map[string]*verbDef, len(verbTable))
	for _, v := range verbTable {
		m[v.name] = v
	}
	return m
}()

func (v *verbDef) pattern() string { return v.method + " " + apiVersion + v.name }

func verbList() string { return strings.Join(Verbs(), ", ") }

// okReply is the reply of a verb that returns nothing else.
type okReply struct {
	OK bool `json:"ok"`
}

// errorReply is the body of every error reply.
type errorReply struct {
	Error string `json:"error"`
	Code  string `json:"code"`
	// Resume, with code upgrading, is how far a restart got.
	Resume *RestartResume `json:"resume,omitempty"`
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
	Resume *RestartResume
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
	v, ok := verbNamed[verb]
	if !ok {
		return &apiError{Status: http.StatusNotFound, Code: codeUnknownVerb,
			Msg: fmt.Sprintf("unknown verb %q (known: %s)", verb, verbList())}
	}
	return &apiError{Status: http.StatusMethodNotAllowed, Code: codeMethodNotAllowed,
		Msg: fmt.Sprintf("%s wants %s, not %s", verb, v.method, r.Method)}
}

// decode turns the HTTP request the router gave to v into its validated
// arguments. It reads at most maxBodyBytes+1 bytes of the body; every
// failure is a 4xx apiError.
func (v *verbDef) decode(r *http.Request) (args, *apiError) {
	a := v.serve.newArgs()
	var aerr *apiError
	if v.method == http.MethodGet {
		aerr = v.decodeQuery(a.(queryArgs), r.URL.RawQuery)
	} else {
		aerr = v.decodeBody(a, r)
	}
	if aerr == nil {
		aerr = a.check(v.name)
	}
	if aerr == nil && v.needNames && len(a.programs()) == 0 {
		aerr = badRequest("%s: name at least one program (or \"all\")", v.name)
	}
	if aerr == nil {
		aerr = checkNames(a.programs())
	}
	if aerr != nil {
		return nil, aerr
	}
	return a, nil
}

func (v *verbDef) decodeBody(a args, r *http.Request) *apiError {
	if r.URL.RawQuery != "" {
		return badRequest("%s takes its arguments in the body, not the query", v.name)
	}
	body, aerr := readBody(r)
	if aerr != nil {
		return aerr
	}
	if v.emptyBody && len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	err := decodeJSON(body, a)
	if err != nil && len(v.foreign) > 0 && strings.Contains(err.Error(), "unknown field") {
		if body, aerr = v.dropForeign(body); aerr != nil {
			return aerr
		}
		err = decodeJSON(body, a)
	}
	if err != nil {
		return badRequest("decoding %s request: %v", v.name, err)
	}
	return nil
}

// dropForeign refuses the first of v's foreign fields body sets away from
// its zero value, and returns body without them. A body it cannot read as
// an object is returned as is, for decodeJSON to say what is wrong.
func (v *verbDef) dropForeign(body []byte) ([]byte, *apiError) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil {
		return body, nil
	}
	for _, f := range v.foreign {
		raw, ok := fields[f.field]
		if !ok {
			continue
		}
		switch string(bytes.TrimSpace(raw)) {
		case "null", "false", "0":
			delete(fields, f.field)
		default:
			return nil, badRequest("%s", f.why)
		}
	}
	b, err := json.Marshal(fields)
	if err != nil {
		return body, nil
	}
	return b, nil
}

func (v *verbDef) decodeQuery(a queryArgs, raw string) *apiError {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return badRequest("%s: bad query: %v", v.name, err)
	}
	for k, vs := range q {
		if !slices.Contains(v.params, k) {
			return badRequest("%s: unknown parameter %q", v.name, k)
		}
		if k != "name" && len(vs) > 1 {
			return badRequest("%s: parameter %q given %d times", v.name, k, len(vs))
		}
	}
	if err := checkNames(q["name"]); err != nil {
		return err
	}
	return a.fromQuery(q)
}

// maxInstances is the most instances scale may ask of one program, as a
// config's instances.
const maxInstances = 10000

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

// encode makes the HTTP request that carries a, the way decode reads it;
// the client sends this and the fuzz test checks the round trip.
func (v *verbDef) encode(ctx context.Context, a args) (*http.Request, error) {
	u := &url.URL{Scheme: "http", Host: "supervise", Path: apiVersion + v.name}
	if v.method == http.MethodGet {
		u.RawQuery = a.(queryArgs).query().Encode()
		return http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	}
	b, err := json.Marshal(a)
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
