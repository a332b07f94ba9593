// Package supervise_test holds the module-wide checks: the dependency
// direction of docs/ARCHITECTURE.md and the short list of third-party modules.
package supervise_test

import (
	"os"
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
// may use, and clock/fakeclock is for tests only. internal/ holds chores
// that import nothing of the module outside internal/ (a package built on
// others lives beside its users: cmd/internal/execcmd).
var imports = map[string][]string{
	"clock":                {},
	"schedule":             {},
	"internal/unixsig":     {"golang.org/x/sys/unix"},
	"internal/execpath":    {"golang.org/x/sys/unix"},
	"internal/reap":        {"golang.org/x/sys/unix"},
	"internal/size":        {},
	"internal/smallfile":   {},
	"internal/sockets":     {"golang.org/x/sys/unix"},
	"internal/listenenv":   {},
	"internal/rungroup":    {},
	"cmd/internal/execcmd": {"backoff", "internal/size", "internal/unixsig", "pid1", "proc"},
	"internal/httpcheck":   {"internal/version"},
	"internal/version":     {},
	"internal/promcheck":   {},        // imported by tests only
	"clock/fakeclock":      {"clock"}, // imported by tests only
	"backoff":              {"clock", "golang.org/x/time/rate"},
	"config":               {"schedule", "internal/consolepath", "internal/size", "internal/smallfile", "internal/listenenv", "internal/sockets", "internal/unixsig", "github.com/BurntSushi/toml", "watch/glob", "golang.org/x/sys/unix"},
	"proc":                 {"internal/execpath", "internal/reap", "internal/listenenv", "internal/unixsig", "proc/cgroups", "golang.org/x/sys/unix"},
	"proc/cgroups":         {"golang.org/x/sys/unix"},
	"hooks":                {"clock", "internal/httpcheck", "proc"},
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
	"pid1":                 {"internal/execpath", "internal/reap", "internal/listenenv", "internal/unixsig", "backoff", "clock", "proc", "golang.org/x/sys/unix"},
	"supervisor/workqueue": {"backoff", "clock"},
	"supervisor/wait":      {"clock"},
	"supervisor": {"internal/listenenv", "internal/sockets", "internal/unixsig", "backoff", "clock", "config", "ctl", "hooks", "logs", "metrics", "notify", "probe", "proc",
		"supervisor/wait", "supervisor/workqueue", "watch"},
	"export":             {"config", "schedule", "internal/execpath", "internal/smallfile", "internal/sockets", "internal/unixsig", "gopkg.in/yaml.v3"},
	"cmd/supervise-init": {"cmd/internal/execcmd", "pid1", "proc"},
	"cmd/supervise": {"cmd/internal/execcmd", "internal/unixsig", "internal/rungroup", "internal/version", "internal/execpath", "export", "config", "ctl", "ctl/ctlfmt", "logs", "metrics", "pid1", "proc", "supervisor", "watch",
		"github.com/urfave/cli/v2", "golang.org/x/sys/unix"},
	// Harnesses and test binaries: anything of ours, x/sys.
	"bench/pid1":            {"golang.org/x/sys/unix"},
	"bench/pid1/floor":      {},
	"bench/coldfloor":       {},
	"bench/peers":           {"golang.org/x/sys/unix"},
	"bench/peers/helper":    {"golang.org/x/sys/unix"},
	"bench/scale/forkcost":  {"golang.org/x/sys/unix"},
	"bench/scrape":          {},
	"bench/listen":          {"golang.org/x/sys/unix"},
	"bench/upgrade":         {"ctl"},
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
		"gopkg.in/yaml.v3":                   "the process-compose importer's, 0.1 ms of package initialisation",
	},
	"cmd/supervise": {
		"github.com/chromedp/chromedp": "the browser driver is the integration tests' only",
		"github.com/chromedp/cdproto":  "the browser driver is the integration tests' only",
	},
}

func goList(t *testing.T, args ...string) string {
	t.Helper()
	return goListOS(t, "", args...)
}

// goListOS is goList for goos ("": this one).
func goListOS(t *testing.T, goos string, args ...string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list packages")
	}
	cmd := exec.Command(goBin, append([]string{"list"}, args...)...)
	if goos != "" {
		cmd.Env = append(os.Environ(), "GOOS="+goos)
	}
	out, err := cmd.Output()
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
			if strings.HasPrefix(pkg, "internal/") && strings.HasPrefix(imp, mod) && !strings.HasPrefix(short(imp), "internal/") {
				t.Errorf("%s imports %s: a package under internal/ imports nothing of the module outside internal/", f[0], imp)
			}
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

// TestDependencyTableUsed keeps the table honest the other way: every
// package it lists exists, and every import it allows is made, on Linux
// or on macOS (the two platforms built). An allowance nobody uses would
// let a new arrow in unnoticed.
func TestDependencyTableUsed(t *testing.T) {
	used := importsOnBoth(t)
	for pkg, allowed := range imports {
		if used[pkg] == nil {
			t.Errorf("deps_test.go lists %q, which is no package of the module: remove its entry", pkg)
			continue
		}
		for _, imp := range allowed {
			if !used[pkg][imp] {
				t.Errorf("deps_test.go allows %q to import %q, which it does not: remove the allowance", pkg, imp)
			}
		}
	}
}

// importsOnBoth maps each package of the module to what it imports on
// Linux or on macOS.
func importsOnBoth(t *testing.T) map[string]map[string]bool {
	t.Helper()
	used := map[string]map[string]bool{}
	for _, goos := range []string{"linux", "darwin"} {
		for line := range strings.Lines(goListOS(t, goos, "-e", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...")) {
			f := strings.Fields(line)
			pkg := short(f[0])
			if used[pkg] == nil {
				used[pkg] = map[string]bool{}
			}
			for _, imp := range f[1:] {
				used[pkg][short(imp)] = true
			}
		}
	}
	return used
}

// TestArchitectureDiagram checks docs/ARCHITECTURE.md's drawing of the
// dependencies against the code: every arrow drawn is an import, and every
// import between the module's packages is drawn, but those of clock and of
// internal/ (leaves the drawing names once) and those of tests, harnesses
// and bench/.
func TestArchitectureDiagram(t *testing.T) {
	doc, err := os.ReadFile("docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), "## Packages and the dependency direction")
	_, after, ok2 := strings.Cut(after, "```\n")
	block, _, ok3 := strings.Cut(after, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("docs/ARCHITECTURE.md: no drawing under \"Packages and the dependency direction\"")
	}
	drawn := diagramArrows(block)
	if len(drawn) == 0 {
		t.Fatal("docs/ARCHITECTURE.md: the drawing has no arrows (PKG ──► PKG, PKG)")
	}
	used := importsOnBoth(t)
	for from, tos := range drawn {
		if used[from] == nil {
			t.Errorf("docs/ARCHITECTURE.md draws arrows from %q, which is no package of the module (one arrow a line: PKG, PKG ──► PKG, PKG)", from)
			continue
		}
		for to := range tos {
			if used[to] == nil {
				t.Errorf("docs/ARCHITECTURE.md draws %s ──► %q, which is no package of the module (one arrow a line: PKG, PKG ──► PKG, PKG)", from, to)
			} else if !used[from][to] {
				t.Errorf("docs/ARCHITECTURE.md draws %s ──► %s, but %s does not import %s", from, to, from, to)
			}
		}
	}
	for from, tos := range used {
		if from == "" || from == "clock/fakeclock" || strings.HasPrefix(from, "internal/") ||
			strings.HasPrefix(from, "bench/") || strings.HasPrefix(from, "integration") {
			continue
		}
		for to := range tos {
			_, ours := used[to]
			if !ours || to == "clock" || strings.HasPrefix(to, "internal/") {
				continue
			}
			if !drawn[from][to] {
				t.Errorf("%s imports %s: draw the arrow in docs/ARCHITECTURE.md", from, to)
			}
		}
	}
}

// diagramArrows reads the lines "A, B ──► C, D (a remark)" of a drawing; a
// line ending in a comma goes on on the next.
func diagramArrows(block string) map[string]map[string]bool {
	arrows := map[string]map[string]bool{}
	var lines []string
	for line := range strings.Lines(block) {
		line = strings.TrimSpace(line)
		if n := len(lines); n > 0 && strings.HasSuffix(lines[n-1], ",") {
			lines[n-1] += " " + line
			continue
		}
		lines = append(lines, line)
	}
	for _, line := range lines {
		left, right, ok := strings.Cut(line, "►")
		if !ok {
			continue
		}
		left = strings.TrimRight(left, "─ ")
		right, _, _ = strings.Cut(right, "(")
		for from := range strings.SplitSeq(left, ",") {
			from = strings.TrimSpace(from)
			if arrows[from] == nil {
				arrows[from] = map[string]bool{}
			}
			for to := range strings.SplitSeq(right, ",") {
				arrows[from][strings.TrimSpace(to)] = true
			}
		}
	}
	return arrows
}

// TestModules keeps the main module's third-party requirements to the
// chosen few (README's "Dependencies are chosen with care").
func TestModules(t *testing.T) {
	allowed := []string{"github.com/urfave/cli/v2", "github.com/BurntSushi/toml", "golang.org/x/sys",
		"github.com/fsnotify/fsnotify", "golang.org/x/time",
		// indirect, through urfave/cli's docs: dropped with -tags urfave_cli_no_docs
		"github.com/cpuguy83/go-md2man/v2", "github.com/russross/blackfriday/v2",
		"github.com/xrash/smetrics",
		// export: the process-compose importer's YAML reader (kept out of supervise-init)
		"gopkg.in/yaml.v3",
		// the integration tests' browser driver (the web console in headless
		// Chromium); never linked into the binary (transitive above)
		"github.com/chromedp/chromedp", "github.com/chromedp/cdproto", "github.com/go-json-experiment/json"}
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
