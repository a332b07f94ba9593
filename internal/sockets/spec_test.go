package sockets

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Spec
	}{
		{"tcp://127.0.0.1:8080", Spec{Network: "tcp", Address: "127.0.0.1:8080"}},
		{"tcp://:80", Spec{Network: "tcp", Address: ":80"}},
		{"tcp6://[::1]:8080?backlog=16&name=http", Spec{Network: "tcp6", Address: "[::1]:8080", Backlog: 16, Name: "http"}},
		{"tcp4://0.0.0.0:9000?reuse_port=true", Spec{Network: "tcp4", Address: "0.0.0.0:9000", ReusePort: true}},
		{"udp://127.0.0.1:53", Spec{Network: "udp", Address: "127.0.0.1:53"}},
		{"unix:///run/app.sock?mode=0660&owner=nobody&group=0&accept=false", Spec{Network: "unix", Address: "/run/app.sock", Mode: 0o660, Owner: "nobody", Group: "0"}},
		{"unixgram:///run/log.sock", Spec{Network: "unixgram", Address: "/run/log.sock"}},
	} {
		got, err := Parse(c.in)
		if err != nil || got != c.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
			continue
		}
		// The canonical form reads back the same.
		if again, err := Parse(got.String()); err != nil || again != got {
			t.Errorf("Parse(%q.String() = %q) = %+v, %v", c.in, got.String(), again, err)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:8080":                      "not a URL",
		"http://127.0.0.1:8080":               "scheme",
		"tcp://localhost:8080":                "not an IP address",
		"tcp://127.0.0.1":                     "HOST:PORT",
		"tcp://127.0.0.1:0":                   "port",
		"tcp://127.0.0.1:70000":               "port",
		"tcp://127.0.0.1:80/x":                "nothing after the port",
		"tcp4://[::1]:80":                     "IPv4",
		"tcp6://127.0.0.1:80":                 "IPv6",
		"unix://run/app.sock":                 "three slashes",
		"unix:///run/../app.sock":             "not clean",
		"unix:///" + strings.Repeat("a", 120): "at most",
		"tcp://:80?backlog=0":                 "backlog",
		"udp://:53?backlog=5":                 "stream sockets only",
		"tcp://:80?accept=true":               "accept can only be false",
		"tcp://:80?mode=0600":                 "unix sockets only",
		"unix:///a.sock?mode=999":             "octal",
		"unix:///a.sock?reuse_port=true":      "tcp and udp",
		"tcp://:80?name=a:b":                  "':'",
		"tcp://:80?colour=red":                "unknown option",
		"tcp://:80?backlog=1&backlog=2":       "2 times",
		"tcp://user@:80":                      "no user",
	} {
		_, err := Parse(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v; want an error saying %q", in, err, want)
		}
	}
}

func TestKey(t *testing.T) {
	a, _ := Parse("tcp4://127.0.0.1:80")
	b, _ := Parse("tcp://127.0.0.1:80?backlog=5")
	c, _ := Parse("udp://127.0.0.1:80")
	if a.Key() != b.Key() || a.Key() == c.Key() {
		t.Errorf("keys %q %q %q: want the first two equal, the udp one apart", a.Key(), b.Key(), c.Key())
	}
}
