//go:build linux

// Command floor is the least a Go init can be, for bench/pid1 to measure
// what the Go runtime itself costs an init: it forks and execs the command,
// waits for it and exits with its status. It imports nothing it does not
// need (no flags, no logging), so its start-up is the runtime's.
//
//	floor [--notify] -- CMD [ARGS…]
//
// With --notify it also takes every catchable signal through os/signal
// before it starts the command and forwards each to it, as an init must:
// the difference between the two is what os/signal costs at start-up.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	args := os.Args[1:]
	notify := len(args) > 0 && args[0] == "--notify"
	if notify {
		args = args[1:]
	}
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		os.Stderr.WriteString("usage: floor [--notify] -- CMD [ARGS...]\n")
		os.Exit(2)
	}
	var sigs chan os.Signal
	if notify {
		sigs = make(chan os.Signal, 64)
		for s := syscall.Signal(1); s <= 64; s++ {
			switch s {
			case syscall.SIGKILL, syscall.SIGSTOP, syscall.SIGURG, syscall.SIGCHLD, 32, 33:
				continue
			}
			signal.Notify(sigs, s)
		}
	}
	files := []uintptr{0, 1, 2}
	if _, _, e := syscall.RawSyscall(syscall.SYS_FCNTL, 3, syscall.F_GETFD, 0); e == 0 {
		files = append(files, 3) // bench/pid1's report pipe
	}
	pid, err := syscall.ForkExec(args[0], args, &syscall.ProcAttr{Env: os.Environ(), Files: files})
	if err != nil {
		os.Stderr.WriteString("floor: " + err.Error() + "\n")
		os.Exit(127)
	}
	if notify {
		go func() {
			for s := range sigs {
				_ = syscall.Kill(pid, s.(syscall.Signal))
			}
		}()
	}
	for {
		var ws syscall.WaitStatus
		wpid, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			os.Exit(1)
		}
		if wpid != pid {
			continue
		}
		if ws.Signaled() {
			os.Exit(128 + int(ws.Signal()))
		}
		os.Exit(ws.ExitStatus())
	}
}
