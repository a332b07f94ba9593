//go:build linux

package proc

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestExitCodesAndReasons(t *testing.T) {
	needRoot(t)
	r := newRuntime(t, Options{})
	for _, sc := range []SandboxConfig{
		{Name: "plain", NoCgroup: true},
		{Name: "cgroup"},
		{Name: "pidns", Namespaces: []Namespace{NamespacePID, NamespaceMount}},
	} {
		t.Run(sc.Name, func(t *testing.T) {
			for _, tc := range []struct {
				cfg    ProcessConfig
				code   int
				sig    syscall.Signal
				reason Reason
			}{
				{helper("exit", "0"), 0, 0, ReasonCompleted},
				{helper("exit", "3"), 3, 0, ReasonError},
				{shell("kill -USR1 $$"), -1, syscall.SIGUSR1, ReasonSignaled},
			} {
				sid, ev := run(t, r, sc, tc.cfg)
				if ev.ExitCode != tc.code || ev.Signal != tc.sig || ev.Reason != tc.reason {
					t.Errorf("%v: got code %d signal %v reason %s, want %d %v %s", tc.cfg.Args, ev.ExitCode, ev.Signal, ev.Reason, tc.code, tc.sig, tc.reason)
				}
				st, err := r.Status(ev.ID)
				if err != nil || st.State != StateExited || st.ExitCode != tc.code || st.FinishedAt.Before(st.StartedAt) {
					t.Errorf("status %+v, %v", st, err)
				}
				if err := r.DeleteSandbox(ctxT(t), sid); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

func TestStartErrors(t *testing.T) {
	needRoot(t)
	r := newRuntime(t, Options{})
	ctx := ctxT(t)
	for _, sc := range []SandboxConfig{{Name: "plain", NoCgroup: true}, {Name: "ns", Namespaces: []Namespace{NamespaceUTS}}} {
		sid, err := r.CreateSandbox(ctx, sc)
		if err != nil {
			t.Fatal(err)
		}
		id, err := r.Create(ctx, sid, ProcessConfig{Args: []string{"no-such-program-xyz"}, Umask: -1})
		if err != nil {
			t.Fatal(err)
		}
		err = r.Start(ctx, id)
		want := `starting: exec "no-such-program-xyz": executable file not found in $PATH`
		if err == nil || err.Error() != want {
			t.Errorf("got %v, want %s", err, want)
		}
		if st, _ := r.Status(id); st.State != StateCreated {
			t.Errorf("after a failed start: %s, want Created", st.State)
		}
		// A directory is found but cannot be exec'd: the kernel's error.
		id2, _ := r.Create(ctx, sid, ProcessConfig{Args: []string{"/etc/passwd"}, Umask: -1})
		if err := r.Start(ctx, id2); err == nil || !strings.Contains(err.Error(), "permission denied") {
			t.Errorf("exec of a non-executable: %v", err)
		}
		// Through the stub (umask set) the exec error comes back too.
		id3, _ := r.Create(ctx, sid, ProcessConfig{Args: []string{"/dev/null"}, Umask: 0o22})
		if err := r.Start(ctx, id3); err == nil || !strings.Contains(err.Error(), "permission denied") {
			t.Errorf("exec through the stub of a non-executable: %v", err)
		}
		for _, id := range []string{id, id2, id3} {
			if err := r.Remove(ctx, id); err != nil {
				t.Error(err)
			}
		}
		if err := r.DeleteSandbox(ctx, sid); err != nil {
			t.Error(err)
		}
	}
}

func TestStateMachine(t *testing.T) {
	needRoot(t)
	r := newRuntime(t, Options{})
	ctx := ctxT(t)
	sid, err := r.CreateSandbox(ctx, SandboxConfig{Name: "sm", NoCgroup: true})
	if err != nil {
		t.Fatal(err)
	}
	id, err := r.Create(ctx, sid, helper("sleep"))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Stop(ctx, id, time.Second); !errors.Is(err, ErrInvalidState) {
		t.Errorf("Stop of Created: %v, want ErrInvalidState", err)
	}
	if err := r.Signal(id, syscall.SIGTERM); !errors.Is(err, ErrInvalidState) {
		t.Errorf("Signal of Created: %v, want ErrInvalidState", err)
	}
	if err := r.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctx, id); !errors.Is(err, ErrInvalidState) {
		t.Errorf("Start of Running: %v, want ErrInvalidState", err)
	}
	if err := r.Remove(ctx, id); !errors.Is(err, ErrInvalidState) {
		t.Errorf("Remove of Running: %v, want ErrInvalidState", err)
	}
	if got := r.List(ListFilter{SandboxID: sid, State: StateRunning}); len(got) != 1 || got[0].ID != id || got[0].Pid <= 0 {
		t.Errorf("List: %+v", got)
	}
	if err := r.Stop(ctx, id, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	st, _ := r.Status(id)
	if st.State != StateExited || st.Signal != syscall.SIGTERM || st.Reason != ReasonSignaled {
		t.Errorf("after Stop: %+v", st)
	}
	if err := r.Stop(ctx, id, time.Second); err != nil {
		t.Errorf("Stop of Exited: %v, want nil", err)
	}
	if err := r.Signal(id, syscall.SIGTERM); !errors.Is(err, ErrInvalidState) {
		t.Errorf("Signal of Exited: %v, want ErrInvalidState", err)
	}
	if err := r.Remove(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Status(id); !errors.Is(err, ErrNotFound) {
		t.Errorf("Status after Remove: %v, want ErrNotFound", err)
	}
	if _, err := r.Create(ctx, "nope", helper("sleep")); !errors.Is(err, ErrNotFound) {
		t.Errorf("Create in unknown sandbox: %v", err)
	}
	if _, err := r.CreateSandbox(ctx, SandboxConfig{Name: "x", Namespaces: []Namespace{"time"}}); err == nil {
		t.Error("unknown namespace accepted")
	}
	if _, err := r.CreateSandbox(ctx, SandboxConfig{Name: "x", Hostname: "h"}); err == nil {
		t.Error("hostname without uts accepted")
	}
	if _, err := r.Stats(sid); !errors.Is(err, ErrNoCgroup) {
		t.Errorf("Stats without cgroup: %v", err)
	}
	if _, err := New(Options{}); err == nil {
		t.Error("a second Runtime opened")
	}
}

func TestIdentity(t *testing.T) {
	needRoot(t)
	r := newRuntime(t, Options{})
	for _, sc := range []SandboxConfig{{Name: "direct", NoCgroup: true}, {Name: "init", Namespaces: []Namespace{NamespaceIPC}}} {
		t.Run(sc.Name, func(t *testing.T) {
			dir, err := os.MkdirTemp("", "proc-identity")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			os.Chmod(dir, 0o777) // nobody writes here
			out, ch := lines(t)
			cfg := shell(`id -u; id -g; id -G; ulimit -n; umask; pwd; echo $FOO; grep NoNewPrivs /proc/self/status; touch f; stat -c %a f`)
			cfg.User, cfg.Group, cfg.Groups = "65534", "65534", []string{"65533", "65534"}
			cfg.Rlimits = []Rlimit{{Name: "nofile", Soft: 77, Hard: 88}}
			cfg.Umask = 0o027
			cfg.NoNewPrivileges = true
			cfg.Dir = dir
			cfg.Env = append(cfg.Env, "FOO=bar")
			cfg.Stdout, cfg.Stderr = out, out
			_, ev := run(t, r, sc, cfg)
			if ev.ExitCode != 0 {
				t.Errorf("exit %d", ev.ExitCode)
			}
			want := []string{"65534", "65534", "65534 65533", "77", "0027", dir, "bar", "NoNewPrivs:\t1", "640"}
			for i, w := range want {
				if got := next(t, ch); got != w {
					t.Errorf("line %d: got %q, want %q", i, got, w)
				}
			}
			// Without the stub (no rlimit, umask, nnp): SysProcAttr does it.
			out2, ch2 := lines(t)
			cfg2 := shell(`id -u; id -G; grep NoNewPrivs /proc/self/status`)
			cfg2.User, cfg2.Stdout = "nobody", out2
			_, ev = run(t, r, sc, cfg2)
			if ev.ExitCode != 0 {
				t.Errorf("exit %d", ev.ExitCode)
			}
			for i, w := range []string{"65534", "65534", "NoNewPrivs:\t0"} {
				if got := next(t, ch2); got != w {
					t.Errorf("line %d: got %q, want %q", i, got, w)
				}
			}
		})
	}
	if _, err := r.Create(ctxT(t), "x", ProcessConfig{Args: []string{"true"}, User: "no-such-user-xyz"}); err == nil || !strings.Contains(err.Error(), "no such user") {
		t.Errorf("unknown user: %v", err)
	}
}

func TestExecBuffers(t *testing.T) {
	needRoot(t)
	r := newRuntime(t, Options{})
	ctx := ctxT(t)
	sid, err := r.CreateSandbox(ctx, SandboxConfig{Name: "exec", NoCgroup: true})
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	res, err := r.Exec(ctx, sid, ExecConfig{Args: []string{"sh", "-c", "echo out; echo err >&2; exit 4"}, Stdout: &out, Stderr: &errb})
	if err != nil || res.ExitCode != 4 || out.String() != "out\n" || errb.String() != "err\n" {
		t.Errorf("got %+v %v %q %q", res, err, out.String(), errb.String())
	}
	tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err = r.Exec(tctx, sid, ExecConfig{Args: []string{"sleep", "100"}})
	if err != nil || !res.TimedOut || res.Signal != syscall.SIGKILL || time.Since(start) > 30*time.Second {
		t.Errorf("timeout: got %+v %v after %v", res, err, time.Since(start))
	}
}
