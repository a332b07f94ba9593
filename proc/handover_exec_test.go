//go:build linux

package proc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A sandbox with pid and mount namespaces is handed over across a real
// execve: a helper process builds a runtime, freezes it, kills one
// program while frozen and execs itself; the new image adopts the
// snapshot and must see that exit, find the other program running with
// the same pid under the same init, exec a command in the sandbox, stop
// the program and delete the sandbox, leaving no cgroup.
func TestHandoverAdoptsANamespacedSandbox(t *testing.T) {
	needRoot(t)
	root := fmt.Sprintf("supervise-proc-handover-%d", os.Getpid())
	state := filepath.Join(t.TempDir(), "state.json")
	cmd := exec.Command("/proc/self/exe", root, state)
	cmd.Env = append(os.Environ(), helperEnv+"=handover-old")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil || !strings.Contains(out.String(), "handover ok") {
			t.Fatalf("helper: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errOut.String())
		}
	case <-time.After(5 * time.Minute):
		cmd.Process.Kill()
		<-done
		t.Fatalf("helper hung\nstdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	}
	// The sandbox's cgroup is gone. The subtree itself the adopting
	// runtime did not create, and leaves (as it leaves any it found).
	for _, d := range []string{"", "memory", "pids", "cpu", "freezer", "unified"} {
		dir := filepath.Join("/sys/fs/cgroup", d, root)
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if e.IsDir() {
				t.Errorf("cgroup %s left behind", filepath.Join(dir, e.Name()))
			}
		}
		if err := os.Remove(dir); err != nil {
			t.Errorf("removing the test's subtree: %v", err)
		}
	}
}

// handoverMain is the helper's two lives: args are the cgroup root and
// the state file.
func handoverMain(role string, args []string) int {
	var err error
	if role == "handover-old" {
		err = handoverOld(args[0], args[1])
	} else {
		err = handoverNew(args[0], args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, role+":", err)
		return 1
	}
	fmt.Println("handover ok")
	return 0
}

func handoverOld(root, state string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := New(Options{CgroupRoot: root})
	if err != nil {
		return err
	}
	sid, err := r.CreateSandbox(ctx, SandboxConfig{Name: "ns", Namespaces: []Namespace{NamespacePID, NamespaceMount}})
	if err != nil {
		return err
	}
	var ids []string
	for range 2 {
		id, err := r.Create(ctx, sid, ProcessConfig{Args: []string{"sleep", "100000"}, Env: []string{"PATH=" + defaultPath}, Umask: -1})
		if err != nil {
			return err
		}
		if err := r.Start(ctx, id); err != nil {
			return err
		}
		ids = append(ids, id)
	}
	keep, _ := r.Status(ids[0])
	doomed, _ := r.Status(ids[1])
	snap, _, err := r.Freeze(ctx)
	if err != nil {
		return err
	}
	// Dies while frozen: its init's report waits in the socket.
	if err := unix.Kill(doomed.Pid, unix.SIGKILL); err != nil {
		return err
	}
	b, err := json.Marshal(&snap)
	if err != nil {
		return err
	}
	if err := os.WriteFile(state, b, 0o600); err != nil {
		return err
	}
	for _, f := range snap.Files() {
		rc, _ := f.SyscallConn()
		rc.Control(func(fd uintptr) { unix.FcntlInt(fd, unix.F_SETFD, 0) })
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, helperEnv+"=") {
			env = append(env, kv)
		}
	}
	env = append(env, helperEnv+"=handover-new",
		"HANDOVER_KEEP="+ids[0]+","+strconv.Itoa(keep.Pid), "HANDOVER_DOOMED="+ids[1], "HANDOVER_SANDBOX="+sid)
	return unix.Exec("/proc/self/exe", []string{"/proc/self/exe", root, state}, env)
}

func handoverNew(root, state string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, err := os.ReadFile(state)
	if err != nil {
		return err
	}
	var snap Snapshot
	if err := json.Unmarshal(b, &snap); err != nil {
		return err
	}
	files := map[int]*os.File{}
	for _, sb := range snap.Sandboxes {
		if sb.Init != nil && sb.Init.FD >= 0 {
			files[sb.Init.FD] = os.NewFile(uintptr(sb.Init.FD), "init")
		}
	}
	r, err := New(Options{CgroupRoot: root, Adopt: &snap, AdoptFiles: files})
	if err != nil {
		return err
	}
	defer r.Close()
	if len(files) != 0 {
		return fmt.Errorf("%d init sockets not taken", len(files))
	}
	keepID, pidS, _ := strings.Cut(os.Getenv("HANDOVER_KEEP"), ",")
	keepPid, _ := strconv.Atoi(pidS)
	doomed, sid := os.Getenv("HANDOVER_DOOMED"), os.Getenv("HANDOVER_SANDBOX")
	// The exit that happened while frozen is reported by the new runtime.
	select {
	case ev := <-r.Events():
		if ev.ID != doomed || ev.Signal != syscall.SIGKILL {
			return fmt.Errorf("first exit %+v, want %s killed", ev, doomed)
		}
	case <-ctx.Done():
		return fmt.Errorf("the exit during the hand-over never came: %w", ctx.Err())
	}
	if st, err := r.Status(keepID); err != nil || st.State != StateRunning || st.Pid != keepPid {
		return fmt.Errorf("kept process: %+v, %v; want running as pid %d", st, err, keepPid)
	}
	sst, err := r.SandboxStatus(sid)
	if err != nil {
		return err
	}
	if ppid, err := parentOf(keepPid); err != nil || ppid != sst.InitPid {
		return fmt.Errorf("kept process's parent %d (%v), its init is %d", ppid, err, sst.InitPid)
	}
	var out bytes.Buffer
	res, err := r.Exec(ctx, sid, ExecConfig{Args: []string{"cat", "/proc/1/cmdline"}, Env: []string{"PATH=" + defaultPath}, Stdout: &out})
	if err != nil || res.ExitCode != 0 || !strings.HasPrefix(out.String(), initArgv0+"\x00") {
		return fmt.Errorf("exec in the adopted sandbox: %+v, %v, %q", res, err, out.String())
	}
	if err := r.Stop(ctx, keepID, 10*time.Second); err != nil {
		return err
	}
	if st, _ := r.Status(keepID); st.State != StateExited || st.Signal != syscall.SIGTERM {
		return fmt.Errorf("kept process after its stop: %+v", st)
	}
	if err := r.DeleteSandbox(ctx, sid); err != nil {
		return err
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", sst.InitPid)); err == nil {
		return fmt.Errorf("the init %d outlived its sandbox", sst.InitPid)
	}
	return r.Close()
}
