package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestListen(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "app.sock")
	cfg, err := Parse("s.toml", []byte(`
[program.web]
command = "srv"
listen = ["tcp://127.0.0.1:18080?name=http", "unix://`+sock+`?mode=0660"]
notify = "fd"
`))
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Programs[0]
	if len(p.Listen) != 2 || p.Listen[0].Name != "http" || p.Listen[1].Address != sock {
		t.Fatalf("Listen = %+v", p.Listen)
	}
	if p.NotifyFD != 5 {
		t.Errorf("notify_fd defaults to %d with two sockets, want 5 (after them)", p.NotifyFD)
	}
}

func TestListenErrors(t *testing.T) {
	open := filepath.Join(t.TempDir(), "open")
	os.Mkdir(open, 0o777)
	os.Chmod(open, 0o777)
	cases := map[string]string{
		`listen = ["tcp://localhost:80"]`:                                   `s.toml:4: program.web.listen[0]: "tcp://localhost:80": "localhost" is not an IP address`,
		`listen = "tcp//127.0.0.1:80"`:                                      `s.toml:4: program.web.listen: "tcp//127.0.0.1:80": want a URL`,
		`listen = ["unix://` + open + `/a.sock"]`:                           `s.toml:4: program.web.listen[0]: the socket's directory ` + open + ` is writable by others`,
		`listen = ["tcp://:18080", "tcp4://0.0.0.0:18081", "tcp://:18080"]`: `s.toml:4: program.web.listen[2]: :18080 is listed twice`,
		"listen = [\"tcp://:18080\"]\nnotify = \"fd\"\nnotify_fd = 3":       `s.toml:6: program.web.notify_fd: descriptor 3 is one of the listen sockets (3 to 3): use 4 or above`,
		`listen = ["unix:///run/x.sock?owner=no-such-user-here"]`:           `no user "no-such-user-here" on this machine`,
		`listen = [3]`: `program.web.listen[0]: must be a string`,
	}
	for body, want := range cases {
		_, err := Parse("s.toml", []byte("\n[program.web]\ncommand = \"srv\"\n"+body+"\n"))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s:\n got %v\nwant %s", body, err, want)
		}
	}
}

func TestListenTwoPrograms(t *testing.T) {
	_, err := Parse("s.toml", []byte(`
[program.a]
command = "srv"
listen = ["tcp://127.0.0.1:18080"]
[program.b]
command = "srv"
listen = ["tcp4://127.0.0.1:18080?backlog=5"]
`))
	want := `s.toml:7: program.b.listen[0]: 127.0.0.1:18080 is program "a"'s already`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

func TestHoldPorts(t *testing.T) {
	cfg, err := ParseProcfile("Procfile", []byte("web: ./srv -p $PORT\nworker: cd app && exec ./w\nplain: FOO=1 ./x\n"), ProcfileOptions{HoldPorts: true, BasePort: 6000})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct{ listen, cmd string }{
		"web":    {":6000", "exec ./srv -p $PORT"},
		"worker": {":6100", "cd app && exec ./w"},
		"plain":  {":6200", "FOO=1 ./x"},
	}
	for _, p := range cfg.Programs {
		w := want[p.Name]
		if len(p.Listen) != 1 || p.Listen[0].Address != w.listen || p.Listen[0].Name != p.Name || p.Command[2] != w.cmd {
			t.Errorf("%s: listen %+v, command %q; want %s and %q", p.Name, p.Listen, p.Command, w.listen, w.cmd)
		}
	}
}
