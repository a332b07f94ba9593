package notify

import "testing"

func TestLineMatcher(t *testing.T) {
	m, err := NewLineMatcher(`^listening on :\d+$`)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		line string
		want bool
	}{
		{"listening on :8080", true},
		{"listening on :8080\n", true},
		{"listening on :8080\r\n", true},
		{"listening on :http", false},
		{"  listening on :8080", false},
		{"", false},
	} {
		if got := m.Match(tc.line); got != tc.want {
			t.Errorf("Match(%q) = %v, want %v", tc.line, got, tc.want)
		}
	}
	if m.String() != `^listening on :\d+$` {
		t.Errorf("String() = %q", m.String())
	}
	if _, err := NewLineMatcher(`ready(`); err == nil {
		t.Error("NewLineMatcher(\"ready(\"): no error")
	}
}
