package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Real supervisord.conf files run end to end: each command= is replaced
// by a stand-in that prints the program's name and environment and
// sleeps, users this machine does not have are dropped, and the rest is
// imported, checked and run by the real binary. The programs start in
// supervisord's priority order (a program once those of the lower
// priority are running), with the environment the file gives them.
func TestImportSupervisordRealFilesRun(t *testing.T) {
	needRoot(t) // poolcounter runs as www-data
	standIn := `command=/bin/sh -c 'echo "%(program_name)s up user=$(id -un) HOME=$HOME NODE_ENV=$NODE_ENV INFORMIX_HOME=$INFORMIX_HOME"; exec sleep 1000'`
	commandRE := regexp.MustCompile(`(?m)^command\s*=.*$`)
	userRE := regexp.MustCompile(`(?m)^user\s*=\s*(node|informix)\s*$`)
	for _, tc := range []struct {
		file  string
		order []string          // each starts once the one before it is running
		lines map[string]string // program → what its line holds
	}{
		{"52poke-mediawiki.conf", []string{"poolcounter", "php-fpm", "nginx"}, map[string]string{
			"poolcounter": "poolcounter up user=www-data ", "php-fpm": "php-fpm up user=root ", "nginx": "nginx up user=root "}},
		{"0ddityspace-samba.conf", []string{"smbd", "avahia"}, map[string]string{"smbd": "smbd up ", "avahia": "avahia up "}},
		{"4players-openclaw.conf", nil, map[string]string{"gateway": "gateway up user=root HOME=/home/node NODE_ENV=production "}},
		{"0x1fff-informix.conf", nil, map[string]string{"informix": "INFORMIX_HOME=/home/informix"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("..", "export", "testdata", "supervisord", tc.file))
			must(t, err)
			conf := commandRE.ReplaceAllLiteral(src, []byte(standIn))
			conf = userRE.ReplaceAll(conf, []byte("; user=$1 (not on this machine)"))
			dir := t.TempDir()
			// www-data's working directory, and the test's parent of it
			must(t, os.Chmod(filepath.Dir(dir), 0o755))
			must(t, os.Chmod(dir, 0o755))
			must(t, os.WriteFile(filepath.Join(dir, "supervisord.conf"), conf, 0o644))
			toml := filepath.Join(dir, "supervise.toml")
			if out, err := exec.Command(binary, "import", "supervisord", "-o", toml, filepath.Join(dir, "supervisord.conf")).CombinedOutput(); err != nil {
				t.Fatalf("import: %v\n%s", err, out)
			}
			if out, code := runCheck(t, toml); code != 0 {
				t.Fatalf("check: %s", out)
			}
			d := startDaemon(t, dir, toml)
			for prog, want := range tc.lines {
				eventually(t, prog+"'s line on the console", 60*time.Second, func() bool {
					for _, l := range strings.Split(d.stdout.String(), "\n") {
						if strings.Contains(l, prog) && strings.Contains(l, want) {
							return true
						}
					}
					return false
				})
			}
			// The supervisor's own account of the order: each program's
			// first Starting comes after the Running of the one before.
			evs := d.events()
			at := func(prog, to string) int {
				for i, ev := range evs {
					if ev.Program == prog && ev.To == to {
						return i
					}
				}
				t.Fatalf("no %s→%s in the events: %+v", prog, to, evs)
				return -1
			}
			for i := 1; i < len(tc.order); i++ {
				if before, after := tc.order[i-1], tc.order[i]; at(before, "Running") > at(after, "Starting") {
					t.Errorf("%s started before %s was running", after, before)
				}
			}
			d.signal(syscall.SIGTERM)
			if code := d.wait(60 * time.Second); code != 0 {
				t.Errorf("supervise exit %d", code)
			}
		})
	}
}
