package soak

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// kind is what a program of the soak does.
type kind string

const (
	kindSleep    kind = "sleep"    // sleeps
	kindCrash    kind = "crash"    // exits non-zero, or kills itself, after 0-3 s
	kindOOM      kind = "oom"      // grows past memory_max: the OOM killer ends it
	kindCycle    kind = "cycle"    // forks daemons and exits 0 after 1-2 s: they must die with its sandbox
	kindDaemon   kind = "daemon"   // forks children, grandchildren, setsid'ed and orphaned daemons
	kindWriter   kind = "writer"   // writes numbered lines as fast as it can, in blocks, forever
	kindOneShot  kind = "oneshot"  // restart = "never": writes 20 blocks of numbered lines and exits 0
	kindStubborn kind = "stubborn" // ignores SIGTERM (its whole group does): every stop waits out stop_timeout
	kindHUP      kind = "hup"      // traps HUP, USR1 and USR2 and lives on
	kindHostile  kind = "hostile"  // as nobody, turns its own log against root: symlinks, FIFOs, huge lines
)

// Hostile programs run as nobody in a log directory of their own
// (logs/NAME/, nobody's), and keep swapping their log for a symlink to
// the canary (a root file that must never change) and for a FIFO, and
// writing lines longer than the pumps' maximum, with no newline.
const (
	hostileMaxSize = 64 << 10 // max_size of their logs
	canaryName     = "canary"
	canaryText     = "root's file: supervise must never write here\n"
)

const hostileScript = `cd logs/%[1]s; n=0
while :; do
  n=$((n + 1))
  echo "hostile line $n"
  case $((n %% 10)) in
    3) rm -f out.log; ln -s ../../%[2]s out.log ;;
    6) rm -f out.log; mkfifo out.log ;;
    9) head -c 200000 /dev/zero | tr '\0' h ;;
  esac
  sleep 0.05
done`

// Numbered lines: every writer writes blocks "B id", "L id 1" … "L id n",
// "E id n", where id is unique to the block (pid, start time, counter).
// Each line is one write(2) of a few dozen bytes to the pipe, so a line is
// either wholly written or not at all. A line L id i present means lines 1
// … i-1 of that block were written before it, and an E line means all n
// were: the check needs no knowledge of when the writer was killed.
const (
	writerBlock  = 1000 // lines per block of a writer
	oneShotBlock = 500
	oneShotRuns  = 20 // blocks of a one-shot run
)

// keeperName is the program that keeps running while the others are all
// stopped for a measurement. supervise exits once no program has a process
// and none is waiting to start (that is how a set of one-shots ends), and
// it also does so when they were stopped by supervisectl (see the report
// of the soak: that is checked on its own, at the end). The driver never
// stops or removes the keeper.
const keeperName = "keeper"

// program is one [program.NAME] of the config. The zero values of the
// knobs are the intended config; the driver's changes set them.
type program struct {
	name       string
	kind       kind
	variant    int // which shape of its kind
	autostart  bool
	hooks      bool
	namespaces []string
	memoryMax  string
	pidsMax    int
	logFile    bool
	rotate     bool // small max_size: the file rotates during the run

	// What a reload changes. gen is in the env (a new process);
	// stopTimeout and backoffMax are applied in place; extraMemory changes
	// the sandbox (a new process).
	gen         int
	stopTimeout string
	backoffMax  string
	extraMemory bool
}

// steady programs run until something ends them: when they should run,
// they must be found Running at the end.
func (p *program) steady() bool {
	switch p.kind {
	case kindCrash, kindOOM, kindCycle, kindOneShot:
		return false
	}
	return true
}

// changeable programs are the ones a reload may modify (writers and
// one-shots keep their shape: their logs are checked).
func (p *program) changeable() bool {
	return p.kind != kindWriter && p.kind != kindOneShot && p.kind != kindHostile
}

func (p *program) clone() *program {
	c := *p
	c.namespaces = append([]string(nil), p.namespaces...)
	return &c
}

const writerScript = `run=$$.$(date +%%s%%N); b=0
while %s; do
  b=$((b + 1)); echo "B $run.$b"
  i=1; while [ $i -le %d ]; do echo "L $run.$b $i"; i=$((i + 1)); done
  echo "E $run.$b %d"
  sleep %s
done
%s`

func (p *program) command() []string {
	sh := func(script string) []string { return []string{"sh", "-c", script} }
	switch p.kind {
	case kindSleep:
		switch p.variant % 3 {
		case 0:
			return []string{"sleep", "100000"}
		case 1:
			return sh("exec sleep 100000")
		default:
			return sh("while :; do sleep 5; done")
		}
	case kindCrash:
		end := []string{"exit $((r % 5 + 1))", "kill -USR1 $$", "kill -KILL $$"}[p.variant%3]
		return sh("r=$(od -An -N2 -tu2 /dev/urandom); sleep $((r % 30 / 10)).$((r % 10)); " + end)
	case kindOOM:
		return sh(`sleep 1; exec awk 'BEGIN { s = "x"; for (;;) s = s s }'`)
	case kindCycle:
		return sh("sleep 100000 & setsid sleep 100000 & (setsid sleep 100000 &); " +
			"r=$(od -An -N1 -tu1 /dev/urandom); sleep 1.$((r % 10)); exit 0")
	case kindDaemon:
		switch p.variant % 4 {
		case 0: // children of the shell, which waits for them
			return sh("sleep 100000 & sleep 100000 & wait")
		case 1: // double-forked and setsid'ed daemons: orphans re-parented to the supervisor (or the sandbox init)
			return sh("(sleep 100000 &); (setsid sleep 100000 &); while :; do sleep 3600; done")
		case 2: // short-lived orphans, all the time: each must be reaped by whoever inherits it
			return sh("while :; do (sleep 0.5 &); (setsid sh -c 'sleep 0.2' &); sleep 1; done")
		default: // a setsid'ed child with a daemon of its own
			return sh("setsid sh -c '(sleep 100000 &); while :; do sleep 3600; done' & while :; do sleep 3600; done")
		}
	case kindWriter:
		return sh(fmt.Sprintf(writerScript, ":", writerBlock, writerBlock, "0.2", ""))
	case kindOneShot:
		return sh(fmt.Sprintf(writerScript, fmt.Sprintf("[ $b -lt %d ]", oneShotRuns), oneShotBlock, oneShotBlock, "0.3", "exit 0"))
	case kindStubborn:
		return sh("trap '' TERM; while :; do sleep 1; done")
	case kindHUP:
		return sh("trap 'echo hup' HUP; trap 'echo usr1' USR1; trap 'echo usr2' USR2; while :; do sleep 1; done")
	case kindHostile:
		return sh(fmt.Sprintf(hostileScript, p.name, canaryName))
	}
	panic("unknown kind " + p.kind)
}

// toml writes the program's table.
func (p *program) toml(b *strings.Builder) {
	fmt.Fprintf(b, "\n[program.%s]\ncommand = %s\n", p.name, tomlArray(p.command()))
	if !p.autostart {
		b.WriteString("autostart = false\n")
	}
	if p.kind == kindOneShot {
		b.WriteString("restart = \"never\"\n")
	}
	stop := p.stopTimeout
	if p.kind == kindStubborn && stop == "" {
		stop = "2s"
	}
	if stop != "" {
		fmt.Fprintf(b, "stop_timeout = %q\n", stop)
	}
	if p.gen != 0 {
		fmt.Fprintf(b, "env = { SOAK_GEN = \"%d\" }\n", p.gen)
	}
	if p.backoffMax != "" {
		fmt.Fprintf(b, "[program.%s.backoff]\nmax = %q\n", p.name, p.backoffMax)
	}
	mem := p.memoryMax
	if p.extraMemory && mem == "" {
		mem = "48MiB"
	}
	if len(p.namespaces) > 0 || mem != "" || p.pidsMax > 0 {
		fmt.Fprintf(b, "[program.%s.sandbox]\n", p.name)
		if len(p.namespaces) > 0 {
			fmt.Fprintf(b, "namespaces = %s\n", tomlArray(p.namespaces))
		}
		if containsStr(p.namespaces, "uts") {
			fmt.Fprintf(b, "hostname = %q\n", p.name)
		}
		if mem != "" {
			fmt.Fprintf(b, "memory_max = %q\n", mem)
		}
		if p.pidsMax > 0 {
			fmt.Fprintf(b, "pids_max = %d\n", p.pidsMax)
		}
	}
	if p.kind == kindHostile {
		fmt.Fprintf(b, "user = \"nobody\"\n[program.%s.stdout]\nfile = \"logs/%s/out.log\"\nmax_size = \"64KiB\"\nmax_files = 3\n", p.name, p.name)
	}
	if p.logFile {
		fmt.Fprintf(b, "[program.%s.stdout]\nfile = \"logs/%s.log\"\n", p.name, p.name)
		if p.rotate {
			b.WriteString("max_size = \"2MiB\"\nmax_files = 3\n")
		} else {
			b.WriteString("max_size = \"256MiB\"\nmax_files = 2\n")
		}
	}
	if p.hooks {
		for _, h := range []struct{ phase, cmd string }{
			{"pre_start", `["sh", "-c", "echo pre_start $SUPERVISE_PROGRAM"]`},
			{"post_start", `["true"]`},
			{"pre_stop", `["true"]`},
			{"post_stop", `["sh", "-c", "echo post_stop $SUPERVISE_EXIT_CODE"]`},
		} {
			fmt.Fprintf(b, "[program.%s.hooks.%s]\ncommand = %s\ntimeout = \"20s\"\n", p.name, h.phase, h.cmd)
		}
	}
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// tomlArray renders strings as a TOML array of basic strings.
func tomlArray(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = tomlString(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// tomlString quotes s as a TOML basic string: our strings are printable
// ASCII and newlines.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteRune(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c < ' ' || c > '~':
			panic(fmt.Sprintf("tomlString: unexpected %q", c))
		default:
			b.WriteRune(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// baseConfig builds the 200 programs of the intended config.
func basePrograms() map[string]*program {
	ps := map[string]*program{}
	add := func(k kind, n int, shape func(i int, p *program)) {
		for i := range n {
			p := &program{name: fmt.Sprintf("%s-%02d", k, i), kind: k, variant: i, autostart: true}
			if shape != nil {
				shape(i, p)
			}
			ps[p.name] = p
		}
	}
	add(kindCrash, 24, func(i int, p *program) {
		if i%8 == 5 {
			p.namespaces = []string{"pid", "mount"}
		}
	})
	add(kindOOM, 3, func(i int, p *program) { p.memoryMax = "24MiB" })
	add(kindCycle, 6, func(i int, p *program) {
		if i == 0 {
			p.namespaces = []string{"pid", "mount"}
		}
	})
	add(kindDaemon, 36, func(i int, p *program) {
		switch i % 6 {
		case 0:
			p.namespaces = []string{"pid", "mount"}
		case 1:
			p.pidsMax = 64
		case 2:
			p.memoryMax = "64MiB"
		}
	})
	add(kindWriter, 10, func(i int, p *program) {
		p.logFile = true
		p.rotate = i%2 == 0
		if i%3 == 0 {
			p.memoryMax = "64MiB"
		}
	})
	add(kindOneShot, 8, func(i int, p *program) { p.logFile = true })
	add(kindStubborn, 6, nil)
	add(kindHUP, 6, nil)
	add(kindHostile, 2, nil)
	// keeper runs throughout: the supervisor ends by itself once every
	// program has ended (see keeperName), and the quiet phases stop all
	// the others.
	ps[keeperName] = &program{name: keeperName, kind: kindSleep, autostart: true}
	add(kindSleep, 98, func(i int, p *program) {
		switch {
		case i < 6:
			p.hooks = true
		case i < 11:
			p.autostart = false
		case i%10 == 0:
			p.memoryMax = "32MiB"
		case i%10 == 1:
			p.pidsMax = 16
		case i%15 == 2:
			p.namespaces = []string{"uts", "ipc"}
		case i%15 == 3:
			p.namespaces = []string{"net"}
		case i%15 == 4:
			p.namespaces = []string{"pid", "mount"}
		}
	})
	if len(ps) != 200 {
		panic(fmt.Sprintf("basePrograms: %d programs, want 200", len(ps)))
	}
	return ps
}

// extraPrograms are what reloads add (and remove again): not in the
// intended config.
func extraPrograms() map[string]*program {
	ps := map[string]*program{}
	kinds := []kind{kindSleep, kindDaemon, kindWriter, kindHUP, kindCrash, kindSleep}
	for i := range 30 {
		k := kinds[i%len(kinds)]
		p := &program{name: fmt.Sprintf("extra-%s-%02d", k, i), kind: k, variant: i, autostart: true}
		if k == kindWriter {
			p.logFile = true
		}
		if i%5 == 1 {
			p.namespaces = []string{"pid", "mount"}
		}
		if i%7 == 3 {
			p.memoryMax = "64MiB"
		}
		ps[p.name] = p
	}
	return ps
}

// renderConfig writes the whole config for programs.
func renderConfig(programs map[string]*program, marker string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `# The chaos soak's config (integration/soak), rewritten by its driver.
[supervisor]
workers = 4
shutdown_timeout = "2m"
log_level = "info"
watch_config = true

[defaults]
restart = "always"
stop_timeout = "3s"
env = { SUPERVISE_SOAK_RUN = %q }

[defaults.backoff]
initial = "100ms"
max = "2s"
reset_after = "30s"

[defaults.stdout]
console = false

[defaults.stderr]
console = false
`, marker)
	names := make([]string, 0, len(programs))
	for n := range programs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		programs[n].toml(&b)
	}
	return b.String()
}

// writeAtomic replaces file as config tools do, so the supervisor's watcher
// and a reload never read half a file.
func writeAtomic(file, data string) error {
	tmp := filepath.Join(filepath.Dir(file), "."+filepath.Base(file)+".tmp")
	if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}
