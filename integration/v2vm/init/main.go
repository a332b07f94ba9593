//go:build linux

// Command init is PID 1 of the cgroup v2 test VM (scripts/v2vm.sh): it
// mounts proc, sys, devtmpfs, a tmpfs on /tmp and cgroup2 at /sys/fs/cgroup,
// enables memory, pids and cpu for the root's children, runs every test
// binary under /tests/<name>/<name>.test (as root, in the root cgroup), prints
// "V2VM PASS <name>" or "V2VM FAIL <name>" for each on the console, then
// "V2VM DONE", and powers the VM off. It reaps every orphan, since it is
// PID 1.
//
// Kernel command line knobs: v2vm.timeout=<go duration> (each binary's
// -test.timeout, default 10m), v2vm.run=<regexp> (-test.run), v2vm.short=1
// (-test.short). A binary that outlives its timeout by a minute is
// reported ("V2VM STUCK", with every task's kernel stack) and killed.
//
// It writes a heartbeat line every few seconds to the second serial port
// (/dev/ttyS1), from a timer: the host tells a guest whose clock or CPUs have
// stopped, where no timeout inside the guest can fire, from a test that is
// merely slow.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "v2vm init: not PID 1; this program is the init of the test VM")
		os.Exit(2)
	}
	go heartbeat("/dev/ttyS1", 5*time.Second)
	pass, fail := run()
	fmt.Printf("V2VM DONE pass=%d fail=%d\n", pass, fail)
	unix.Sync()
	// Powering off ends qemu (-no-reboot); if it fails the kernel panics
	// when init exits, which ends qemu too.
	if err := unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF); err != nil {
		fmt.Println("V2VM poweroff:", err)
	}
	select {}
}

func run() (pass, fail int) {
	if err := mountAll(); err != nil {
		fmt.Println("V2VM FAIL setup:", err)
		return 0, 1
	}
	ctrls, _ := os.ReadFile("/sys/fs/cgroup/cgroup.controllers")
	up, _ := os.ReadFile("/proc/uptime")
	fmt.Printf("V2VM kernel %s, up %ss, cgroup2 controllers: %s\n", release(), strings.Fields(string(up) + " ?")[0], strings.TrimSpace(string(ctrls)))
	for _, c := range []string{"memory", "pids", "cpu"} {
		// One at a time: the kernel rejects a whole line if one is missing.
		if err := os.WriteFile("/sys/fs/cgroup/cgroup.subtree_control", []byte("+"+c), 0); err != nil {
			fmt.Printf("V2VM FAIL setup: enabling %s: %v\n", c, err)
			return 0, 1
		}
	}
	ctl, _ := os.ReadFile("/sys/fs/cgroup/cgroup.subtree_control")
	fmt.Printf("V2VM subtree_control: %s\n", strings.TrimSpace(string(ctl)))

	opts := cmdline()
	timeout := opts["v2vm.timeout"]
	if timeout == "" {
		timeout = "10m"
	}
	env := []string{
		"PATH=/bin:/sbin:/usr/bin:/usr/sbin",
		"HOME=/root",
		"TMPDIR=/tmp",
		"USER=root",
		// The tests fail instead of skipping when they do not find v2.
		"SUPERVISE_TEST_CGROUP=v2",
	}
	dirs, _ := filepath.Glob("/tests/*")
	sort.Strings(dirs)
	if len(dirs) == 0 {
		fmt.Println("V2VM FAIL no test binaries under /tests")
		return 0, 1
	}
	for _, dir := range dirs {
		name := filepath.Base(dir)
		args := []string{filepath.Join(dir, name+".test"), "-test.v", "-test.count=1", "-test.timeout=" + timeout}
		if r := opts["v2vm.run"]; r != "" {
			args = append(args, "-test.run="+r)
		}
		if opts["v2vm.short"] == "1" {
			args = append(args, "-test.short")
		}
		fmt.Printf("V2VM RUN %s\n", name)
		start := time.Now()
		status, err := runReaping(args, dir, env, stuckAfter(timeout))
		took := time.Since(start).Round(time.Millisecond)
		switch {
		case err != nil:
			fmt.Printf("V2VM FAIL %s (%v)\n", name, err)
			fail++
		case status.Exited() && status.ExitStatus() == 0:
			fmt.Printf("V2VM PASS %s (%v)\n", name, took)
			pass++
		case status.Signaled():
			fmt.Printf("V2VM FAIL %s (signal %v after %v)\n", name, status.Signal(), took)
			fail++
		default:
			fmt.Printf("V2VM FAIL %s (exit status %d after %v)\n", name, status.ExitStatus(), took)
			fail++
		}
	}
	return pass, fail
}

// runReaping starts a test binary and waits for it with wait4(-1), reaping
// every orphan that comes to PID 1 meanwhile. One owner of all waits: no
// exec.Cmd.Wait beside it that an orphan reaper could rob.
// A binary still running at stuck (its own -test.timeout should have
// ended it) is reported with what every task is blocked in, and ended.
func runReaping(args []string, dir string, env []string, stuck time.Duration) (syscall.WaitStatus, error) {
	pid, err := syscall.ForkExec(args[0], args, &syscall.ProcAttr{
		Dir:   dir,
		Env:   env,
		Files: []uintptr{0, 1, 2},
	})
	if err != nil {
		return 0, err
	}
	watchdog := time.AfterFunc(stuck, func() { reportStuck(pid, stuck) })
	defer watchdog.Stop()
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("wait4: %w", err)
		}
		if got == pid {
			// Reap what the binary left behind before the next one starts.
			for {
				if p, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil); p <= 0 || err != nil {
					break
				}
			}
			return ws, nil
		}
	}
}

// stuckAfter is the test timeout and a minute: the time after which the
// binary's own timeout, which prints its goroutines, has failed to work.
func stuckAfter(timeout string) time.Duration {
	d, err := time.ParseDuration(timeout)
	if err != nil || d <= 0 {
		d = 10 * time.Minute
	}
	return d + time.Minute
}

// reportStuck prints, for every task, its state, what it waits in and its
// kernel stack, asks the kernel for its blocked tasks (sysrq w), then
// sends the binary SIGQUIT (a Go binary prints its goroutines) and, ten
// seconds later, SIGKILL, so that the VM reports a failure rather than
// run into the host's hard timeout with nothing said.
func reportStuck(pid int, after time.Duration) {
	fmt.Printf("V2VM STUCK pid %d still running after %v; tasks:\n", pid, after)
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		stat, _ := os.ReadFile(p + "/stat")
		// pid (comm) state ppid …; comm may hold spaces, not ')'.
		end := strings.LastIndexByte(string(stat), ')')
		if end < 0 {
			continue
		}
		f := strings.Fields(string(stat[end+1:]))
		if len(f) < 2 || f[1] == "2" && f[0] != "D" {
			continue // a kernel thread that is not blocked
		}
		wchan, _ := os.ReadFile(p + "/wchan")
		stack, _ := os.ReadFile(p + "/stack")
		fmt.Printf("V2VM task %s %s wchan=%s\n%s", stat[:end+1], f[0], wchan, stack)
	}
	os.WriteFile("/proc/sys/kernel/sysrq", []byte("1"), 0)
	os.WriteFile("/proc/sysrq-trigger", []byte("w"), 0)
	syscall.Kill(pid, syscall.SIGQUIT)
	time.Sleep(10 * time.Second)
	syscall.Kill(pid, syscall.SIGKILL)
}

// heartbeat writes the guest's uptime to the port every period; the host
// watches the file it fills. Without the port (an older script) it does
// nothing.
func heartbeat(port string, period time.Duration) {
	// devtmpfs is mounted by run; wait for the node rather than race it.
	var f *os.File
	for i := 0; i < 20; i++ {
		var err error
		if f, err = os.OpenFile(port, os.O_WRONLY|unix.O_NOCTTY, 0); err == nil {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if f == nil {
		return
	}
	// A raw port: no newline translation, no echo to wait on.
	if t, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS); err == nil {
		t.Oflag &^= unix.OPOST
		unix.IoctlSetTermios(int(f.Fd()), unix.TCSETS, t)
	}
	for {
		up, _ := os.ReadFile("/proc/uptime")
		fmt.Fprintf(f, "tick %s\n", strings.Fields(string(up) + " ?")[0])
		time.Sleep(period)
	}
}

func mountAll() error {
	for _, m := range []struct {
		src, target, fstype string
		flags               uintptr
		data                string
	}{
		{"proc", "/proc", "proc", unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC, ""},
		{"sysfs", "/sys", "sysfs", unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC, ""},
		{"devtmpfs", "/dev", "devtmpfs", unix.MS_NOSUID, "mode=0755"},
		{"tmpfs", "/tmp", "tmpfs", unix.MS_NOSUID | unix.MS_NODEV, "mode=1777"},
		{"cgroup2", "/sys/fs/cgroup", "cgroup2", unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC, ""},
	} {
		if err := os.MkdirAll(m.target, 0o755); err != nil {
			return err
		}
		if err := unix.Mount(m.src, m.target, m.fstype, m.flags, m.data); err != nil {
			return fmt.Errorf("mounting %s on %s: %w", m.fstype, m.target, err)
		}
	}
	// /dev/shm and /dev/pts for tests that want them; failures are harmless.
	os.MkdirAll("/dev/shm", 0o1777)
	unix.Mount("tmpfs", "/dev/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777")
	os.MkdirAll("/dev/pts", 0o755)
	unix.Mount("devpts", "/dev/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "")
	return nil
}

func cmdline() map[string]string {
	b, _ := os.ReadFile("/proc/cmdline")
	m := make(map[string]string)
	for _, f := range strings.Fields(string(b)) {
		if k, v, ok := strings.Cut(f, "="); ok {
			m[k] = v
		}
	}
	return m
}

func release() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "?"
	}
	return unix.ByteSliceToString(u.Release[:])
}
