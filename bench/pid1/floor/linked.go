//go:build floorlinked

package main

import (
	"context"
	"os"

	"github.com/supervise-dev/supervise/pid1"
	"github.com/supervise-dev/supervise/proc"
)

// Built with -tags floorlinked, the floor carries what supervise-init's
// init reaches (pid1.Run with its sandbox, proc's re-executed init, the
// socket-activation shim; its command-line parsing aside) and runs none of
// it. Its difference from the plain floor is what the larger binary and
// those packages' initialisation cost every start, before an init does
// anything: a part of supervise-init's time that no change to the init's
// own code can take away.
//
// The code is kept by being reachable behind a condition the compiler
// cannot prove false. Importing the packages without using them is not
// enough: the linker then keeps their initialisation and drops the rest,
// and that floor started as fast as the plain one while a floor carrying
// the code took 0.075 ms more to reach main (1,500 interleaved runs).
func init() {
	if len(os.Args) <= 1<<20 {
		return
	}
	if proc.IsInit() {
		os.Exit(proc.InitMain())
	}
	if pid1.IsListenShim() {
		os.Exit(pid1.ListenShimMain())
	}
	code, _ := pid1.Run(context.Background(), pid1.Config{Args: os.Args[1:], Sandbox: &pid1.Sandbox{}})
	os.Exit(code)
}
