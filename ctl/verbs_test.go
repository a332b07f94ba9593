package ctl

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/logs"
)

// docLine is one line of the protocol table in doc.go:
//
//	POST /v1/start    {"names": ["web"], "wait": true} → {"ok": true}
var docLine = regexp.MustCompile(`^//\t(GET|POST) +/v1/([a-z]+)(\?\S*)? +(\{.*\})? *→ *(.*)$`)

// TestProtocolDocMatchesVerbTable: doc.go's protocol table has one line per
// verb of verbTable, with its method, the query parameters it takes or the
// fields of its body, and {"ok": true} for what acts.
func TestProtocolDocMatchesVerbTable(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for line := range strings.SplitSeq(string(src), "\n") {
		m := docLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		method, name, query, body, reply := m[1], m[2], m[3], m[4], m[5]
		v, ok := verbNamed[name]
		if !ok {
			t.Errorf("doc.go documents %s /v1/%s, which verbTable does not have", method, name)
			continue
		}
		seen[name] = true
		if method != v.method {
			t.Errorf("doc.go: %s is %s, verbTable says %s", name, method, v.method)
		}
		var documented, want []string
		if v.method == http.MethodGet {
			q, err := url.ParseQuery(strings.TrimPrefix(query, "?"))
			if err != nil {
				t.Errorf("doc.go: %s: query %q: %v", name, query, err)
			}
			documented, want = slices.Sorted(maps.Keys(q)), slices.Sorted(slices.Values(v.params))
		} else {
			var fields map[string]json.RawMessage
			if body != "" {
				if err := json.Unmarshal([]byte(body), &fields); err != nil {
					t.Errorf("doc.go: %s: body %s is not JSON: %v", name, body, err)
				}
			}
			documented = slices.Sorted(maps.Keys(fields))
			want = jsonFields(reflect.TypeOf(v.serve.newArgs()).Elem())
			// upgrade says which generation to wait for: its outcome
			// comes from the new binary.
			if reply != `{"ok": true}` && name != "upgrade" {
				t.Errorf("doc.go: %s replies %s, want {\"ok\": true}", name, reply)
			}
		}
		if !slices.Equal(documented, want) {
			t.Errorf("doc.go: %s takes %q, verbTable says %q", name, documented, want)
		}
	}
	for _, v := range verbTable {
		if !seen[v.name] {
			t.Errorf("doc.go's protocol table has no line for %s", v.name)
		}
	}
}

// jsonFields is the sorted JSON names of a body type's fields, those of
// embedded structs included.
func jsonFields(t reflect.Type) []string {
	var names []string
	for f := range t.Fields() {
		switch {
		case f.Anonymous && f.Type.Kind() == reflect.Struct:
			names = append(names, jsonFields(f.Type)...)
		case f.IsExported():
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name != "-" {
				names = append(names, name)
			}
		}
	}
	slices.Sort(names)
	return names
}

// TestForeignFieldsAreOtherVerbs: a field a verb refuses as another
// verb's belongs to another verb's body and not to its own.
func TestForeignFieldsAreOtherVerbs(t *testing.T) {
	owners := map[string][]string{}
	for _, v := range verbTable {
		if v.method == http.MethodPost {
			for _, f := range jsonFields(reflect.TypeOf(v.serve.newArgs()).Elem()) {
				owners[f] = append(owners[f], v.name)
			}
		}
	}
	for _, v := range verbTable {
		for _, f := range v.foreign {
			if len(owners[f.field]) == 0 || slices.Contains(owners[f.field], v.name) {
				t.Errorf("%s refuses %q, which is %q's", v.name, f.field, owners[f.field])
			}
			if !strings.HasPrefix(f.why, v.name+": ") {
				t.Errorf("%s refuses %q with %q, which does not name the verb", v.name, f.field, f.why)
			}
		}
	}
}

// TestEveryVerbHasAClientMethod: each verb of the table is sent by a method
// of Client named after it (Status, Start …).
func TestEveryVerbHasAClientMethod(t *testing.T) {
	ct := reflect.TypeFor[*Client]()
	for _, v := range verbTable {
		name := strings.ToUpper(v.name[:1]) + v.name[1:]
		if _, ok := ct.MethodByName(name); !ok {
			t.Errorf("verb %s has no Client.%s", v.name, name)
		}
		// upgrade and version are served by an optional interface: only
		// supervise run can replace its own binary.
		_, inBackend := reflect.TypeFor[Backend]().MethodByName(name)
		_, inUpgrader := reflect.TypeFor[Upgrader]().MethodByName(name)
		if !inBackend && !inUpgrader {
			t.Errorf("verb %s has no Backend.%s nor Upgrader.%s", v.name, name, name)
		}
	}
}

// TestArchitectureDocVerbs: docs/ARCHITECTURE.md's verb table has a row
// for each verb, with its route and its arguments type, and no other.
func TestArchitectureDocVerbs(t *testing.T) {
	b, err := os.ReadFile("../docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, v := range verbTable {
		args := reflect.TypeOf(v.serve.newArgs()).Elem().Name()
		want := fmt.Sprintf("| %s | `%s` | ", v.name, v.pattern())
		if args != "noArgs" {
			want += "`" + args + "`"
		}
		if !strings.Contains(doc, want) {
			t.Errorf("docs/ARCHITECTURE.md's verb table has no row starting %q", want)
		}
	}
	rows := regexp.MustCompile("(?m)^ *\\| ([a-z]+) \\| `(?:GET|POST) /v1/").FindAllStringSubmatch(doc, -1)
	for _, r := range rows {
		if verbNamed[r[1]] == nil {
			t.Errorf("docs/ARCHITECTURE.md's verb table has %s, which verbTable does not", r[1])
		}
	}
	if len(rows) != len(verbTable) {
		t.Errorf("docs/ARCHITECTURE.md's verb table has %d rows, verbTable %d", len(rows), len(verbTable))
	}
}

// recorder is a transport that keeps what the client sends and answers
// {"ok": true}.
type recorder struct{ sent []string }

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	line := req.Method + " " + req.URL.RequestURI()
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		line += " " + string(b)
	}
	r.sent = append(r.sent, line)
	return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader(`{"ok":true}` + "\n")), Request: req}, nil
}

// TestClientWire: what the client sends, byte for byte, as clients of
// earlier versions sent it; a change here breaks servers they talk to.
func TestClientWire(t *testing.T) {
	rec := &recorder{}
	c := Dial("/nonexistent")
	c.hc.Transport = rec
	ctx := t.Context()
	noWait := WaitOptions{NoWait: true, Timeout: 1500 * time.Millisecond}
	_ = c.Start(ctx, []string{"web"}, WaitOptions{})
	_ = c.Start(ctx, []string{"web", "db:1"}, noWait)
	_ = c.Stop(ctx, []string{"web"}, StopOptions{})
	_ = c.Stop(ctx, []string{"all"}, StopOptions{WithDependents: true})
	_ = c.Restart(ctx, []string{"web"}, RestartOptions{})
	_ = c.Restart(ctx, []string{"web"}, RestartOptions{AllAtOnce: true, NoWait: true, Timeout: 2 * time.Second, WithDependents: true})
	_ = c.Scale(ctx, map[string]int{"web": 3}, WaitOptions{})
	_ = c.Scale(ctx, map[string]int{"web": 3, "db": 0}, noWait)
	_ = c.Signal(ctx, syscall.SIGHUP, []string{"web"})
	_ = c.Reload(ctx)
	_ = c.Shutdown(ctx)
	_, _ = c.Status(ctx, nil)
	_, _ = c.Status(ctx, []string{"web", "db:1"})
	_, _ = c.Why(ctx, []string{"web"})
	_ = c.Logs(ctx, nil, -1, false, func(logs.Line) error { return nil })
	_ = c.Logs(ctx, []string{"web"}, 20, true, func(logs.Line) error { return nil })
	_ = c.Events(ctx, false, func(Event) error { return nil })
	_ = c.Events(ctx, true, func(Event) error { return nil })
	want := []string{
		`POST /v1/start {"names":["web"]}`,
		`POST /v1/start {"names":["web","db:1"],"wait":false,"timeout_ms":1500}`,
		`POST /v1/stop {"names":["web"]}`,
		`POST /v1/stop {"names":["all"],"with_dependents":true}`,
		`POST /v1/restart {"names":["web"]}`,
		`POST /v1/restart {"names":["web"],"all_at_once":true,"wait":false,"timeout_ms":2000,"with_dependents":true}`,
		`POST /v1/scale {"counts":{"web":3}}`,
		`POST /v1/scale {"counts":{"db":0,"web":3},"wait":false,"timeout_ms":1500}`,
		`POST /v1/signal {"signal":"HUP","names":["web"]}`,
		`POST /v1/reload {}`,
		`POST /v1/shutdown {}`,
		`GET /v1/status`,
		`GET /v1/status?name=web&name=db%3A1`,
		`GET /v1/why?name=web`,
		`GET /v1/logs`,
		`GET /v1/logs?follow=1&n=20&name=web`,
		`GET /v1/events`,
		`GET /v1/events?follow=1`,
	}
	if !slices.Equal(rec.sent, want) {
		t.Errorf("the client sent\n%s\nwant\n%s", strings.Join(rec.sent, "\n"), strings.Join(want, "\n"))
	}
}
