package export

import (
	"strings"
	"testing"
)

// A program with listen gets a .socket unit beside its service, with the
// sockets, their name and options as supervise binds them; systemd-analyze
// verifies both.
func TestSystemdSocketUnit(t *testing.T) {
	dir := t.TempDir()
	cfg := parse(t, `
[program.web]
command = ["/bin/true"]
listen = ["tcp://127.0.0.1:8080?name=http&backlog=512&reuse_port=true", "tcp6://[::1]:8080?name=http&backlog=512&reuse_port=true", "udp://:5353?name=http&reuse_port=true"]
[program.admin]
command = ["/bin/true"]
listen = ["unix://`+dir+`/admin.sock?mode=0660&owner=0&group=0", "tcp://:9000"]
[program.many]
command = ["/bin/true"]
instances = 2
listen = ["tcp://:9100"]
`)
	files, warns, err := Systemd(cfg, SystemdOptions{Prefix: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	verify(t, files)
	web := unit(t, files, "demo-web.socket")
	for _, line := range []string{"ListenStream=127.0.0.1:8080\n", "ListenStream=[::1]:8080\n", "ListenDatagram=5353\n",
		"FileDescriptorName=http\n", "Backlog=512\n", "ReusePort=true\n", "Service=demo-web.service\n"} {
		if !strings.Contains(web, line) {
			t.Errorf("demo-web.socket lacks %q:\n%s", line, web)
		}
	}
	admin := unit(t, files, "demo-admin.socket")
	for _, line := range []string{"ListenStream=" + dir + "/admin.sock\n", "SocketMode=0660\n", "SocketUser=0\n", "SocketGroup=0\n", "ListenStream=9000\n", "FileDescriptorName=admin\n"} {
		if !strings.Contains(admin, line) {
			t.Errorf("demo-admin.socket lacks %q:\n%s", line, admin)
		}
	}
	if svc := unit(t, files, "demo-web.service"); !strings.Contains(svc, "Requires=demo-web.socket\n") {
		t.Errorf("the service does not require its socket:\n%s", svc)
	}
	if target := unit(t, files, "demo.target"); !strings.Contains(target, "demo-web.socket") {
		t.Errorf("the target does not want the socket:\n%s", target)
	}
	var sawMixed, sawMany bool
	webMixed := 0
	for _, w := range warns {
		if w.Program == "web" && strings.Contains(w.Why, "one name, backlog, mode") {
			webMixed++ // the udp socket's backlog differs; the tcp6 socket's settings are the first's
		}
		sawMixed = sawMixed || w.Program == "admin" && w.Key == "listen" && strings.Contains(w.Why, "one name, backlog, mode")
		sawMany = sawMany || w.Program == "many" && w.Key == "listen"
	}
	if webMixed != 1 {
		t.Errorf("%d warnings of web's mixed options, want 1 (its udp socket): %+v", webMixed, warns)
	}
	if !sawMixed || !sawMany {
		t.Errorf("warnings %+v: want one for admin's mixed options and one for many's instances", warns)
	}
	for _, f := range files {
		if f.Name == "demo-many.socket" {
			t.Error("a template service got a .socket unit")
		}
	}
}

func TestKubernetesWarnsListen(t *testing.T) {
	cfg := parse(t, `
[program.web]
command = ["/bin/true"]
listen = ["tcp://:8080"]
`)
	_, warns, err := Kubernetes(cfg, KubernetesOptions{Image: "example/web:1", Name: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range warns {
		if w.Key == "listen" {
			return
		}
	}
	t.Errorf("no warning for listen: %+v", warns)
}

// A job's .socket unit would start its service at the first connection,
// between its times, where supervise holds the connection until the job's
// next run: written, with a warning saying so.
func TestSystemdSocketUnitOfAJobWarns(t *testing.T) {
	cfg := parse(t, `
[program.report]
command = ["/bin/true"]
schedule = "0 3 * * *"
listen = ["tcp://127.0.0.1:8080"]
`)
	files, warns, err := Systemd(cfg, SystemdOptions{Prefix: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	unit(t, files, "demo-report.socket")
	for _, w := range warns {
		if w.Program == "report" && w.Key == "listen" && strings.Contains(w.Why, "schedule") {
			return
		}
	}
	t.Errorf("no warning that the socket starts the job outside its schedule: %+v", warns)
}
