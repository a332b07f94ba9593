//go:build linux

package proc

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The test binary plays the programs the tests run: PROC_TEST_HELPER
// names the role, the arguments follow. It is also the sandbox init, as
// cmd/supervise is in production.
const helperEnv = "PROC_TEST_HELPER"

func TestMain(m *testing.M) {
	if IsInit() {
		os.Exit(InitMain())
	}
	if role := os.Getenv(helperEnv); role != "" {
		os.Exit(helperMain(role, os.Args[1:]))
	}
	os.Exit(m.Run())
}

func helperMain(role string, args []string) int {
	switch role {
	case "exit": // exit with code args[0]
		n, _ := strconv.Atoi(args[0])
		return n
	case "handover-old", "handover-new": // a runtime handed over across execve
		return handoverMain(role, args)
	case "sleep": // block until killed
		block()
	case "ignore-term": // ignore SIGTERM, say so, block
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ready")
		block()
	case "hog": // touch args[0] MiB, one page at a time
		mib, _ := strconv.Atoi(args[0])
		var keep [][]byte
		for range mib {
			b := make([]byte, 1<<20)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1
			}
			keep = append(keep, b)
		}
		fmt.Println("allocated", len(keep))
		return 0
	case "forkloop": // fork sleepers until the kernel refuses
		n := 0
		for ; n < 1000; n++ {
			_, err := syscall.ForkExec("/bin/sleep", []string{"sleep", "1000"}, &syscall.ProcAttr{})
			if err != nil {
				fmt.Printf("stopped %d %v\n", n, err)
				os.Stdout.Sync()
				block()
			}
		}
		fmt.Printf("never stopped %d\n", n)
		block()
	case "busy": // spin for args[0] seconds of wall time
		secs, _ := strconv.ParseFloat(args[0], 64)
		end := time.Now().Add(time.Duration(secs * float64(time.Second)))
		x := 0
		for time.Now().Before(end) {
			for i := range 100000 {
				x += i
			}
		}
		fmt.Println(x > 0)
		return 0
	case "ifaces": // list network interfaces and whether they are up
		ifs, err := net.Interfaces()
		if err != nil {
			fmt.Println("error", err)
			return 1
		}
		for _, i := range ifs {
			fmt.Printf("%s up=%v\n", i.Name, i.Flags&net.FlagUp != 0)
		}
		return 0
	case "daemons": // start args[0] setsid'd grandchildren, print their pids, block
		n, _ := strconv.Atoi(args[0])
		for range n {
			pid, err := syscall.ForkExec("/bin/sleep", []string{"sleep", "987654"},
				&syscall.ProcAttr{Sys: &syscall.SysProcAttr{Setsid: true}})
			if err != nil {
				fmt.Println("error", err)
				return 1
			}
			fmt.Println(pid)
		}
		fmt.Println("done")
		block()
	case "orphans": // start args[0] short sleepers and exit at once: they become orphans
		n, _ := strconv.Atoi(args[0])
		for range n {
			if _, err := syscall.ForkExec("/bin/sleep", []string{"sleep", "0.05"}, &syscall.ProcAttr{}); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown helper", role)
	return 2
}

// block parks a helper until it is killed. Not select{}: without cgo the
// runtime would call that a deadlock and exit 2.
func block() {
	for {
		time.Sleep(time.Hour)
	}
}

// helper returns a ProcessConfig running the test binary in role.
func helper(role string, args ...string) ProcessConfig {
	exe, err := os.Executable()
	if err != nil {
		panic(err)
	}
	env := []string{helperEnv + "=" + role, "GOMAXPROCS=1", "PATH=" + defaultPath}
	if dir := coverDir(); dir != "" {
		env = append(env, "GOCOVERDIR="+dir)
	}
	return ProcessConfig{
		Args:  append([]string{exe}, args...),
		Env:   env,
		Umask: -1,
	}
}

// coverDir is where a helper writes its coverage under -cover: the test's
// own directory for it, so the helpers' runs count. Without it a helper
// built with coverage ends by warning on stderr, which tests read.
func coverDir() string {
	if testing.CoverMode() == "" {
		return ""
	}
	if f := flag.Lookup("test.gocoverdir"); f != nil && f.Value.String() != "" {
		return f.Value.String()
	}
	return os.Getenv("GOCOVERDIR")
}

func shell(script string) ProcessConfig {
	return ProcessConfig{Args: []string{"/bin/sh", "-c", script}, Env: []string{"PATH=" + defaultPath}, Umask: -1}
}

func needRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: cgroups, namespaces and placement are privileged")
	}
}

// testRoot is our own cgroup subtree, created by the runtime and removed
// by Close; tests never touch a cgroup they did not create.
func testRoot() string { return fmt.Sprintf("supervise-proc-test-%d", os.Getpid()) }

// newRuntime opens a runtime for one test and closes it at cleanup,
// checking that every sandbox directory it made is gone.
func newRuntime(t testing.TB, opts Options) *Runtime {
	t.Helper()
	if opts.CgroupRoot == "" {
		opts.CgroupRoot = testRoot()
	}
	if opts.Spawner == SpawnerAuto {
		// PROC_TEST_SPAWNER=always runs every start test through the
		// spawner (scripts/test.sh does, once).
		opts.Spawner = SpawnerMode(os.Getenv("PROC_TEST_SPAWNER"))
	}
	r, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		for _, d := range []string{"", "memory", "pids", "cpu", "freezer", "unified"} {
			if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", d, opts.CgroupRoot)); err == nil {
				t.Errorf("cgroup %s/%s left behind", d, opts.CgroupRoot)
			}
		}
	})
	return r
}

func needCgroups(t testing.TB, r *Runtime) {
	t.Helper()
	if r.cg == nil {
		t.Skipf("no usable cgroups here: %v", r.cgErr)
	}
}

// ctxT is a generous deadline for one step: the machine may be loaded.
func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// lines reads a pipe line by line into a channel until EOF.
func lines(t testing.TB) (*os.File, <-chan string) {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan string, 1024)
	go func() {
		defer close(ch)
		defer pr.Close()
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	t.Cleanup(func() { pw.Close() })
	return pw, ch
}

// next returns the next line or fails after a generous wait.
func next(t testing.TB, ch <-chan string) string {
	t.Helper()
	select {
	case l, ok := <-ch:
		if !ok {
			t.Fatal("output ended")
		}
		return l
	case <-time.After(60 * time.Second):
		t.Fatal("no output in 60s")
	}
	return ""
}

// run creates a sandbox, runs cfg in it and returns the exit event.
func run(t testing.TB, r *Runtime, sc SandboxConfig, cfg ProcessConfig) (string, ExitEvent) {
	t.Helper()
	ctx := ctxT(t)
	sid, err := r.CreateSandbox(ctx, sc)
	if err != nil {
		t.Fatal(err)
	}
	id := mustStart(t, r, sid, cfg)
	return sid, waitExit(t, r, id)
}

func mustStart(t testing.TB, r *Runtime, sid string, cfg ProcessConfig) string {
	t.Helper()
	ctx := ctxT(t)
	id, err := r.Create(ctx, sid, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	return id
}

// waitExit waits for the exit event of id (events of others are dropped:
// tests that run several processes read Events themselves).
func waitExit(t testing.TB, r *Runtime, id string) ExitEvent {
	t.Helper()
	timeout := time.After(120 * time.Second)
	for {
		select {
		case ev := <-r.Events():
			if ev.ID == id {
				return ev
			}
		case <-timeout:
			t.Fatalf("no exit of %s in 120s", id)
		}
	}
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// ourChildren lists the pids whose parent is this process.
func ourChildren() []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	me := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 1 {
			if pp, _ := strconv.Atoi(f[1]); pp == me {
				out = append(out, pid)
			}
		}
	}
	return out
}

func countFds() int {
	ents, _ := os.ReadDir("/proc/self/fd")
	return len(ents)
}

var _ = unix.SIGKILL
