package ctl

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
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
			if reply != `{"ok": true}` {
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
		if _, ok := reflect.TypeFor[Backend]().MethodByName(name); !ok {
			t.Errorf("verb %s has no Backend.%s", v.name, name)
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
