package supervisor

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// lifecycleOrder is the order of the states in the docs' table.
var lifecycleOrder = allStates

// transitionsTable renders the lifecycle as the markdown table of
// docs/ARCHITECTURE.md.
func transitionsTable() string {
	var b strings.Builder
	b.WriteString("| from | to | when |\n| --- | --- | --- |\n")
	for _, from := range lifecycleOrder {
		for _, to := range transitions[from] {
			fmt.Fprintf(&b, "| `%s` | `%s` | %s |\n", from, to, why[[2]State{from, to}])
		}
	}
	return b.String()
}

// The table in docs/ARCHITECTURE.md is the code's. SUPERVISE_UPDATE_DOCS=1
// rewrites it.
func TestArchitectureDocTransitions(t *testing.T) {
	const path = "../docs/ARCHITECTURE.md"
	const begin, end = "<!-- transitions:begin -->\n", "<!-- transitions:end -->"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no %q … %q markers", path, begin, end)
	}
	want := transitionsTable()
	if got := doc[i+len(begin) : j]; got != want {
		if os.Getenv("SUPERVISE_UPDATE_DOCS") == "1" {
			if err := os.WriteFile(path, []byte(doc[:i+len(begin)]+want+doc[j:]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("the lifecycle table in %s is not the code's; run SUPERVISE_UPDATE_DOCS=1 go test ./supervisor -run TestArchitectureDocTransitions\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

// Every state is in the table, every move has its reason, and nothing
// else is legal.
func TestTransitionsTable(t *testing.T) {
	if len(transitions) != len(lifecycleOrder) {
		t.Fatalf("%d states have moves, want %d", len(transitions), len(lifecycleOrder))
	}
	n := 0
	for from, tos := range transitions {
		for _, to := range tos {
			n++
			if why[[2]State{from, to}] == "" {
				t.Errorf("%s → %s has no reason", from, to)
			}
			if from == to {
				t.Errorf("%s → %s: a move to the same state is implicit", from, to)
			}
		}
	}
	if n != len(why) {
		t.Errorf("%d reasons for %d moves", len(why), n)
	}
	for _, from := range lifecycleOrder {
		for _, to := range lifecycleOrder {
			want := from == to || why[[2]State{from, to}] != ""
			if legal(from, to) != want {
				t.Errorf("legal(%s, %s) = %v, want %v", from, to, !want, want)
			}
		}
	}
}

// An illegal move is refused, counted and logged; the state stays.
func TestIllegalTransitionRefused(t *testing.T) {
	h := newHarness(t, program("web"))
	h.waitState("web", Running)
	h.sup.mu.Lock()
	h.sup.setStateLocked(h.sup.instances["web"], Completed, "")
	st, n := h.sup.instances["web"].state, h.sup.illegal
	h.sup.mu.Unlock()
	if st != Running || n != 1 {
		t.Fatalf("after Running → Completed: state %s, illegal count %d; want Running, 1", st, n)
	}
	h.sup.mu.Lock()
	h.sup.illegal = 0 // the harness checks that none happened
	h.sup.mu.Unlock()
}
