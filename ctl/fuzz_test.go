package ctl

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// FuzzDecodeRequest feeds raw HTTP requests to the decoder. Whatever comes
// in, decoding does not panic; a refusal is a 4xx with a code and a
// message; an accepted request is valid, and encoding it as the client does
// and decoding that again gives the same request.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		get("/v1/status"),
		get("/v1/status?name=web&name=db%3A1"),
		get("/v1/logs?name=web&n=20&follow=1"),
		get("/v1/logs?n=-5&follow="),
		get("/v1/events?follow=true"),
		post("/v1/restart", `{"names":["web","all"]}`),
		post("/v1/restart", `{"names":["db"],"with_dependents":true,"all_at_once":true}`),
		post("/v1/stop", `{"names":["db"],"with_dependents":true}`),
		post("/v1/start", `{"names":["db"],"with_dependents":true}`),
		post("/v1/signal", `{"signal":"SIGHUP","names":["web:1"]}`),
		post("/v1/signal", `{"signal":"9","names":["x"]}`),
		post("/v1/reload", ``),
		post("/v1/scale", `{"counts":{"web":3,"worker":0}}`),
		post("/v1/scale", `{"counts":{"web":3},"wait":false,"timeout_ms":500}`),
		post("/v1/start", `{"names":["web"],"wait":false,"timeout_ms":1500}`),
		post("/v1/shutdown", `{}`),
		post("/v1/start", `{"names":["db"],"with_dependents":false,"all_at_once":false}`),
		post("/v1/stop", `{"names":["db"],"wait":null,"timeout_ms":0,"bogus":0}`),
		post("/v1/stop", `{"names":["a"],"names":["b"]}`),
		post("/v1/start", `{"names":["\u00e9t\u00e9"]} `),
		post("/v1/start", `{"names":[null]}`),
		"POST /v1/stop HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"nam\r\n0\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	mux := NewServer(ServerConfig{}).mux
	f.Fuzz(func(t *testing.T, raw []byte) {
		hr, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
		if err != nil {
			return // not HTTP: net/http refuses it before us
		}
		v, a, aerr := routeAndDecode(mux, hr)
		if aerr != nil {
			if aerr.Status < 400 || aerr.Status > 499 || aerr.Code == "" || aerr.Msg == "" {
				t.Fatalf("refusal %+v: want a 4xx with a code and a message", aerr)
			}
			if _, err := json.Marshal(errorReply{Error: aerr.Msg, Code: aerr.Code}); err != nil {
				t.Fatalf("refusal does not encode: %v", err)
			}
			return
		}
		for _, n := range a.programs() {
			if err := checkName(n); err != nil {
				t.Fatalf("accepted a bad name: %v", err)
			}
		}
		switch a := a.(type) {
		case *signalArgs:
			if a.sig <= 0 || a.sig > 64 {
				t.Fatalf("accepted signal %d", a.sig)
			}
		case *scaleArgs:
			if checkCounts(a.Counts) != nil {
				t.Fatalf("accepted scale counts %v", a.Counts)
			}
		case *logsArgs:
			if a.N < -1 {
				t.Fatalf("n = %d: below -1", a.N)
			}
		}
		if v.needNames && len(a.programs()) == 0 {
			t.Fatalf("accepted %s without names", v.name)
		}

		// Round trip through the client's encoding and the wire.
		out, err := v.encode(context.Background(), a)
		if err != nil {
			t.Fatalf("encoding %+v: %v", a, err)
		}
		var wire bytes.Buffer
		if err := out.Write(&wire); err != nil {
			t.Fatalf("writing %+v: %v", a, err)
		}
		back, err := http.ReadRequest(bufio.NewReader(&wire))
		if err != nil {
			t.Fatalf("reading back %q: %v", wire.Bytes(), err)
		}
		v2, again, aerr := routeAndDecode(mux, back)
		if aerr != nil {
			t.Fatalf("the client's encoding of %+v is refused: %v\n%s", a, aerr, wire.Bytes())
		}
		if v2 != v || !reflect.DeepEqual(again, a) {
			t.Fatalf("round trip changed the request:\n got %s %+v\nwant %s %+v", v2.name, again, v.name, a)
		}
	})
}

// routeAndDecode does what the server does with a request before the
// backend: the router picks the verb (or none), then the verb decodes.
func routeAndDecode(mux *http.ServeMux, r *http.Request) (*verbDef, args, *apiError) {
	_, pattern := mux.Handler(r)
	_, path, ok := strings.Cut(pattern, " ")
	if !ok { // "/" or a redirect: no verb's route
		return nil, nil, unrouted(r)
	}
	v := verbNamed[strings.TrimPrefix(path, apiVersion)]
	a, aerr := v.decode(r)
	return v, a, aerr
}

// TestEveryVerbHasItsRoute: the wire description the client encodes with
// and the server's routes agree, method included.
func TestEveryVerbHasItsRoute(t *testing.T) {
	mux := NewServer(ServerConfig{}).mux
	for _, v := range verbTable {
		for _, m := range []string{http.MethodGet, http.MethodPost} {
			r, _ := http.NewRequest(m, "http://supervise"+apiVersion+v.name, nil)
			_, pattern := mux.Handler(r)
			want := "/"
			if m == v.method {
				want = m + " " + apiVersion + v.name
			}
			if pattern != want {
				t.Errorf("%s %s routes to %q, want %q", m, v.name, pattern, want)
			}
		}
	}
}
