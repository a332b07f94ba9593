package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// --watch leaves alone what a developer never edits: a process appending
// to log/x.log every 50 ms, and writes under tmp/, node_modules/, what
// .gitignore ignores and what --watch-ignore names, restart nothing in
// 12 s, while one change to a source file restarts once. (Writes every
// 50 ms keep a batch from going quiet, so it fires at the watcher's 10 s
// longest wait: the span must pass that.)
func TestDevRunnerWatchIgnoresLogs(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"Procfile": "web: echo web up; exec sleep 1000\n" +
			"logger: while :; do echo x >> log/x.log; echo y >> tmp/cache; echo z >> node_modules/m/i.js; echo c >> coverage/c.out; echo k >> build/out.gen; echo n >> notes.bak; sleep 0.05; done\n",
		".gitignore":        "# build output\n/coverage/\n*.bak\n",
		"log/.keep":         "",
		"tmp/.keep":         "",
		"node_modules/m/.k": "",
		"coverage/.keep":    "",
		"build/.keep":       "",
		"app/app.rb":        "puts 1\n",
	})
	r := startDev(t, dir, append(devEnv(t.TempDir()), "NO_COLOR=1"), "--watch", "--watch-ignore", "*.gen")
	eventually(t, "web up and the logger writing", 30*time.Second, func() bool {
		st, err := os.Stat(filepath.Join(dir, "log", "x.log"))
		return strings.Count(r.out.String(), "web up") == 1 && err == nil && st.Size() > 10
	})
	time.Sleep(12 * time.Second) // the span in which no restart may come
	if n := strings.Count(r.out.String(), "files changed"); n != 0 {
		t.Fatalf("%d restarts in 12 s from writes to ignored files:\n%s", n, tail(r.out.String(), 20))
	}
	if err := os.WriteFile(filepath.Join(dir, "app", "app.rb"), []byte("puts 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, "web restarted after app/app.rb changed", 30*time.Second, func() bool {
		return strings.Count(r.out.String(), "web up") == 2
	})
	time.Sleep(2 * time.Second) // a second restart would come within the debounce
	if n := strings.Count(r.out.String(), "web up"); n != 2 {
		t.Errorf("web started %d times, want 2 (one restart for one change):\n%s", n, tail(r.out.String(), 20))
	}
}
