//go:build linux

package cgroups

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as the programs the root tests put into cgroups:
// with SUPERVISE_CGROUPS_HELPER set, TestMain runs that helper instead of
// the tests. With SUPERVISE_CGROUPS_WAIT=1 a helper first blocks reading fd
// 3 until the test has placed it (the v1 "stopped stub" placement in
// miniature), so that everything it does happens inside the cgroup.
const (
	envHelper = "SUPERVISE_CGROUPS_HELPER"
	envWait   = "SUPERVISE_CGROUPS_WAIT"
	envArg    = "SUPERVISE_CGROUPS_ARG"
)

var helpers = map[string]func(arg string) int{
	// delegated runs as an ordinary user in a cgroup delegated to it (as
	// systemd's Delegate=yes leaves one): it opens our subtree below its
	// own cgroup and creates a limited cgroup there.
	"delegated": func(string) int {
		r, err := Open(Options{})
		if err != nil {
			fmt.Fprintln(os.Stderr, "Open as uid", os.Getuid(), err)
			return 1
		}
		cg, err := r.Create("web", Resources{MemoryMax: 32 << 20, PidsMax: 64})
		if err != nil {
			fmt.Fprintln(os.Stderr, "Create:", err)
			return 1
		}
		mem, err1 := os.ReadFile(cg.dirs[0] + "/memory.max")
		pids, err2 := os.ReadFile(cg.dirs[0] + "/pids.max")
		if err1 != nil || err2 != nil || string(mem) != "33554432\n" || string(pids) != "64\n" {
			fmt.Fprintf(os.Stderr, "limits: memory.max %q (%v), pids.max %q (%v)\n", mem, err1, pids, err2)
			return 1
		}
		if err := cg.Delete(); err != nil {
			fmt.Fprintln(os.Stderr, "Delete:", err)
			return 1
		}
		if err := r.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "Close:", err)
			return 1
		}
		fmt.Println("limits written by uid", os.Getuid())
		return 0
	},
	// sleep blocks until killed.
	"sleep": func(string) int {
		for {
			time.Sleep(time.Hour)
		}
	},
	// hog touches arg MiB and exits 0 if it is still alive.
	"hog": func(arg string) int {
		mib, _ := strconv.Atoi(arg)
		keep := make([][]byte, 0, mib)
		for i := 0; i < mib; i++ {
			b := make([]byte, 1<<20)
			for j := 0; j < len(b); j += 4096 {
				b[j] = byte(j) | 1
			}
			keep = append(keep, b)
		}
		fmt.Println("survived", len(keep))
		return 0
	},
	// busy spins for the duration arg.
	"busy": func(arg string) int {
		d, _ := time.ParseDuration(arg)
		end := time.Now().Add(d)
		n := 0
		for time.Now().Before(end) {
			for i := 0; i < 1e5; i++ {
				n += i
			}
		}
		return n & 0
	},
	// daemons starts arg daemonizing children, prints the pid of each
	// daemon they leave behind, then "ready", then blocks.
	"daemons": func(arg string) int {
		n, _ := strconv.Atoi(arg)
		for i := 0; i < n; i++ {
			cmd := helperCmd("daemonize", "")
			cmd.Stdout = os.Stdout
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			if err := cmd.Run(); err != nil {
				fmt.Fprintln(os.Stderr, "daemonize:", err)
				return 1
			}
		}
		fmt.Println("ready")
		for {
			time.Sleep(time.Hour)
		}
	},
	// daemonize starts a sleeper in a new session, prints its pid and
	// exits without waiting: the sleeper is orphaned, in its own session.
	"daemonize": func(string) int {
		cmd := helperCmd("sleep", "")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "daemonize:", err)
			return 1
		}
		fmt.Println(cmd.Process.Pid)
		return 0
	},
}

func TestMain(m *testing.M) {
	if name := os.Getenv(envHelper); name != "" {
		if os.Getenv(envWait) == "1" {
			f := os.NewFile(3, "release")
			var b [1]byte
			if _, err := f.Read(b[:]); err != nil {
				fmt.Fprintln(os.Stderr, "waiting for placement:", err)
				os.Exit(1)
			}
			f.Close()
		}
		h, ok := helpers[name]
		if !ok {
			fmt.Fprintln(os.Stderr, "unknown helper", name)
			os.Exit(2)
		}
		os.Exit(h(os.Getenv(envArg)))
	}
	os.Exit(m.Run())
}

// helperCmd returns a command running helper name of this test binary.
func helperCmd(name, arg string) *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), envHelper+"="+name, envArg+"="+arg, envWait+"=")
	return cmd
}
