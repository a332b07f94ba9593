// Command supervise-init is `supervise exec` alone: a container init in the
// line of tini and dumb-init, with the same flags, that links nothing of
// supervise but the init, so that it starts as fast as a Go program can
// (a container's start-up waits for its init). `supervise exec` remains;
// both run the same code.
//
//	supervise-init [flags] -- CMD [ARGS…]
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/supervise-dev/supervise/cmd/internal/execcmd"
	"github.com/supervise-dev/supervise/pid1"
	"github.com/supervise-dev/supervise/proc"
)

func main() {
	// The re-executed sandbox init (--memory-max, --ns) and the socket
	// activation shim dispatch first, as in supervise.
	if proc.IsInit() {
		os.Exit(proc.InitMain())
	}
	if pid1.IsListenShim() {
		os.Exit(pid1.ListenShimMain())
	}
	args := os.Args[1:]
	if code, ok := execcmd.Main(args); ok {
		os.Exit(code)
	}
	err := execcmd.Check(args)
	if errors.Is(err, execcmd.ErrHelp) || err == nil { // nil: shell completion, which we do not offer
		execcmd.Help(os.Stdout, "supervise-init")
		os.Exit(0)
	}
	fmt.Fprintf(os.Stderr, "supervise-init: %v\nRun 'supervise-init --help' for usage.\n", err)
	os.Exit(execcmd.ExitUsage)
}
