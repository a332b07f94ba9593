// Package supervise_test holds the module-wide checks: the dependency
// direction of docs/ARCHITECTURE.md and the short list of third-party modules.
package supervise_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const mod = "github.com/supervise-dev/supervise/"

// imports lists, for every package of the module (tests aside), what it
// may import directly besides the standard library. The direction:
// cmd → supervisor → {proc, hooks, probe, notify, watch, backoff, config,
// logs, ctl}; hooks and probe → proc; ctl → logs only; proc imports none of
// the others; nothing imports supervisor but cmd; clock is a leaf anyone
// may use, and clock/fakeclock is for tests only.
var imports = map[string][]string{
	"clock":                {},
	"schedule":             {},
	"internal/unixsig":     {"golang.org/x/sys/unix"},
	"internal/execpath":    {"golang.org/x/sys/unix"},
	"internal/reap":        {"golang.org/x/sys/unix"},
	"internal/size":        {},
	"internal/execcmd":     {"backoff", "internal/size", "internal/unixsig", "pid1", "proc"},
	"internal/httpcheck":   {"internal/version"},
	"internal/version":     {},
	"internal/promcheck":   {},        // imported by tests only
	"clock/fakeclock":      {"clock"}, // imported by tests only
	"backoff":              {"clock", "golang.org/x/time/rate"},
	"config":               {"schedule", "internal/consolepath", "internal/size", "internal/unixsig", "github.com/BurntSushi/toml", "watch/glob", "golang.org/x/sys/unix"},
	"proc":                 {"internal/execpath", "internal/reap", "internal/unixsig", "proc/cgroups", "golang.org/x/sys/unix"},
	"proc/cgroups":         {"golang.org/x/sys/unix"},
	"hooks":                {"internal/httpcheck", "proc"},
	"probe":                {"clock", "internal/httpcheck", "proc"},
	"notify":               {"clock", "golang.org/x/sys/unix"},
	"logs":                 {"internal/consolepath", "golang.org/x/sys/unix"},
	"ctl":                  {"internal/connlimit", "internal/unixsig", "logs", "golang.org/x/sys/unix"},
	"internal/connlimit":   {},
	"internal/consolepath": {},
	"internal/sockowner":   {"golang.org/x/sys/unix"},
	"metrics":              {"internal/connlimit", "internal/sockowner", "golang.org/x/sys/unix"},
	"ctl/ctlfmt":           {"ctl", "logs"},
	"watch":                {"github.com/fsnotify/fsnotify", "clock", "watch/glob"},
	"watch/glob":           {},
	"pid1":                 {"internal/execpath", "internal/reap", "internal/unixsig", "backoff", "clock", "config", "proc", "golang.org/x/sys/unix"},
	"supervisor/workqueue": {"backoff", "clock"},
	"supervisor/wait":      {"clock"},
	"supervisor": {"internal/unixsig", "backoff", "clock", "config", "ctl", "hooks", "logs", "metrics", "notify", "probe", "proc",
		"supervisor/wait", "supervisor/workqueue", "watch", "golang.org/x/sys/unix"},
	"export":             {"config", "schedule", "internal/execpath", "internal/unixsig"},
	"cmd/supervise-init": {"internal/execcmd", "pid1", "proc"},
	"cmd/supervise": {"internal/execcmd", "internal/unixsig", "internal/version", "internal/execpath", "export", "backoff", "clock", "config", "ctl", "ctl/ctlfmt", "logs", "metrics", "pid1", "proc", "supervisor", "watch",
		"github.com/urfave/cli/v2", "golang.org/x/sys/unix"},
	// Harnesses and test binaries: anything of ours, x/sys.
	"bench/pid1":            {"golang.org/x/sys/unix"},
	"bench/pid1/floor":      {},
	"bench/peers":           {"golang.org/x/sys/unix"},
	"bench/peers/helper":    {"golang.org/x/sys/unix"},
	"bench/scrape":          {},
	"integration/v2vm/init": {"golang.org/x/sys/unix"},
	"integration":           {},
	"integration/soak":      {},
	"":                      {}, // this package
}

// transitive are dependencies a package must not reach even indirectly.
var transitive = map[string]map[string]string{
	"ctl": {
		"supervisor":               "the supervisor implements ctl.Backend, not the reverse",
		"proc":                     "supervisectl must not link the sandbox runtime",
		"config":                   "the protocol knows nothing of config files",
		"github.com/urfave/cli/v2": "the CLI lives in cmd/supervise",
	},
	"proc": {"config": "proc takes its own plain structs", "supervisor": "the runtime never drives"},
	"cmd/supervise-init": {
		"github.com/urfave/cli/v2":           "the init's start-up is the container's: no CLI framework",
		"github.com/BurntSushi/toml":         "no config file in the init",
		"net/http":                           "nothing of the control socket in the init",
		"config":                             "the init reads flags only",
		"github.com/russross/blackfriday/v2": "urfave/cli's docs, 0.5 ms of package initialisation",
	},
}

func goList(t *testing.T, args ...string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list packages")
	}
	out, err := exec.Command(goBin, append([]string{"list"}, args...)...).Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	return string(out)
}

func short(p string) string {
	if p == strings.TrimSuffix(mod, "/") {
		return ""
	}
	return strings.TrimPrefix(p, mod)
}

func isStd(p string) bool {
	first, _, _ := strings.Cut(p, "/")
	return !strings.Contains(first, ".")
}

func TestDependencyDirection(t *testing.T) {
	out := goList(t, "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...")
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		pkg := short(f[0])
		allowed, known := imports[pkg]
		if !known {
			t.Errorf("package %q has no entry in the dependency table of deps_test.go: add it, keeping docs/ARCHITECTURE.md's direction", pkg)
			continue
		}
		for _, imp := range f[1:] {
			if isStd(imp) || slices.Contains(allowed, short(imp)) {
				continue
			}
			if strings.HasPrefix(pkg, "integration") && strings.HasPrefix(imp, mod) {
				continue // black-box tests may use anything
			}
			t.Errorf("%s imports %s: allowed are the standard library and %v", f[0], imp, allowed)
		}
	}
	for pkg, bad := range transitive {
		for dep := range strings.FieldsSeq(goList(t, "-deps", mod+pkg)) {
			if why, ok := bad[short(dep)]; ok {
				t.Errorf("%s depends on %s: %s", pkg, dep, why)
			}
		}
	}
}

// TestModules keeps the main module's third-party requirements to the
// chosen few (README's "Dependencies are chosen with care").
func TestModules(t *testing.T) {
	allowed := []string{"github.com/urfave/cli/v2", "github.com/BurntSushi/toml", "golang.org/x/sys",
		"github.com/fsnotify/fsnotify", "golang.org/x/time",
		// indirect, through urfave/cli's docs: dropped with -tags urfave_cli_no_docs
		"github.com/cpuguy83/go-md2man/v2", "github.com/russross/blackfriday/v2",
		"github.com/xrash/smetrics"}
	// The modules of every package our packages and tests build with.
	out := goList(t, "-deps", "-test", "-f", `{{with .Module}}{{if not .Main}}{{.Path}}{{end}}{{end}}`, "./...")
	seen := map[string]bool{}
	for m := range strings.FieldsSeq(out) {
		if !slices.Contains(allowed, m) {
			if seen[m] {
				continue
			}
			seen[m] = true
			t.Errorf("module %s is required: every dependency needs a reason in a commit and a place in this list", m)
		}
	}
}
