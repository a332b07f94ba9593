package hooks

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/proc"
)

func TestMain(m *testing.M) {
	if proc.IsInit() { // the runtime may re-execute us as its stub
		os.Exit(proc.InitMain())
	}
	os.Exit(m.Run())
}

// TestCommandHook runs command hooks through a real proc.Runtime: the
// call's directory and environment, the output to the program's log, and
// each way a command fails (exit code, signal, timeout, no sandbox).
func TestCommandHook(t *testing.T) {
	rt, err := proc.New(proc.Options{CgroupMode: "none", NoSubreaper: true})
	if err != nil {
		t.Skipf("no process runtime here: %v", err)
	}
	defer rt.Close()
	sid, err := rt.CreateSandbox(t.Context(), proc.SandboxConfig{Name: "hooks-test", NoCgroup: true})
	if err != nil {
		t.Fatalf("CreateSandbox: %v", err)
	}
	dir := t.TempDir()
	r := &Runner{Exec: rt}
	call := func(out *bytes.Buffer) Call {
		c := Call{Phase: PostStart, SandboxID: sid,
			Exec: proc.ExecConfig{Dir: dir, Env: []string{"PATH=/usr/bin:/bin", "WHO=hook"}}}
		if out != nil {
			c.Output = out
		}
		return c
	}

	var out bytes.Buffer
	if err := r.Run(t.Context(), Spec{Command: []string{"sh", "-c", `echo "$WHO in $PWD"; echo err >&2`}}, call(&out)); err != nil {
		t.Fatalf("succeeding hook: %v", err)
	}
	if got, want := out.String(), "hook in "+dir+"\nerr\n"; got != want {
		t.Errorf("output = %q, want %q", got, want)
	}

	for _, c := range []struct {
		name    string
		command string
		want    string
	}{
		{"exit code", "exit 3", `post_start hook: "sh -c exit 3" exited with code 3`},
		{"signal", "kill -TERM $$", `post_start hook: "sh -c kill -TERM $$" killed by signal terminated`},
	} {
		err := r.Run(t.Context(), Spec{Command: []string{"sh", "-c", c.command}}, call(nil))
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}

	// Past its timeout the command is killed and the error says so.
	err = r.Run(t.Context(), Spec{Command: []string{"sleep", "600"}, Timeout: 300 * time.Millisecond}, call(nil))
	if !errors.Is(err, ErrTimeout) || !strings.HasSuffix(err.Error(), "after 300ms and was killed") {
		t.Errorf("hook past its timeout: error %v, want ErrTimeout, killed", err)
	}

	// A sandbox that is gone fails the hook with the runtime's reason.
	c := call(nil)
	c.SandboxID = "no-such-sandbox"
	err = r.Run(t.Context(), Spec{Command: []string{"true"}}, c)
	if !errors.Is(err, proc.ErrNotFound) || !strings.Contains(err.Error(), `running "true"`) {
		t.Errorf("hook in a missing sandbox: error %v, want running \"true\": ErrNotFound", err)
	}
}
