package pid1

import (
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// killFromAnother sends sig to us from another process, kill(1).
func killFromAnother(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if out, err := exec.Command("kill", "-"+strconv.Itoa(int(sig)), strconv.Itoa(os.Getpid())).CombinedOutput(); err != nil {
		t.Fatalf("kill -%d: %v %s", sig, err, out)
	}
}

// nextTapped waits for the next signal that came through the tap.
func nextTapped(t *testing.T, ch <-chan os.Signal, want syscall.Signal) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case s := <-ch:
			got, tapped := received(s)
			if !tapped {
				t.Fatalf("%v came through os/signal, not the tap", got)
			}
			if got != want {
				t.Fatalf("the tap passed on %v before the %v another process sent (one this process caused?)", got, want)
			}
			return
		case <-deadline:
			t.Fatalf("%v sent by kill(1) did not come out of the tap", want)
		}
	}
}

func tapOrSkip(t *testing.T, ch chan<- os.Signal, sigs ...syscall.Signal) {
	t.Helper()
	if !tapSupported {
		t.Skip("no signal tap on this architecture")
	}
	release, err := tapSignals(ch, nil, sigs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
}

// TestTapPassesOnlySentSignals: SIGPIPE, SIGURG and SIGPROF sent by
// another process (kill(1)) come out of the tap; those this process
// causes (the scheduler's preemption SIGURGs, SIGPIPE from writing to a
// closed pipe, a signal it sends itself) do not, and still reach the
// runtime (preemption goes on working: the spinning goroutines below
// would otherwise starve the test on GOMAXPROCS CPUs).
func TestTapPassesOnlySentSignals(t *testing.T) {
	ch := make(chan os.Signal, 64)
	tapOrSkip(t, ch, unix.SIGPIPE, unix.SIGURG, unix.SIGPROF, unix.SIGUSR1)

	own := atomic.LoadInt64(&tapSelfCaused)
	writeToClosedPipe(t)
	if err := unix.Kill(os.Getpid(), unix.SIGURG); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	for range runtime.GOMAXPROCS(0) + 2 {
		go func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
	}
	deadline := time.Now().Add(60 * time.Second)
	for atomic.LoadInt64(&tapSelfCaused) < own+5 { // SIGPIPE, our SIGURG, 3 preemptions at least
		if time.Now().After(deadline) {
			t.Fatalf("the tap saw %d signals this process caused, want 5 or more", atomic.LoadInt64(&tapSelfCaused)-own)
		}
		runtime.Gosched()
	}
	close(stop)

	for _, sig := range []syscall.Signal{unix.SIGPIPE, unix.SIGURG, unix.SIGPROF, unix.SIGUSR1} {
		killFromAnother(t, sig)
		nextTapped(t, ch, sig)
	}
	select {
	case s := <-ch:
		t.Errorf("the tap passed on an extra %v", s)
	default:
	}
}

// TestTapTwice: SIGPIPE stays tapped after a release (see tapSignals); a
// second tap still drops our own SIGPIPE and passes on one sent.
func TestTapTwice(t *testing.T) {
	if !tapSupported {
		t.Skip("no signal tap on this architecture")
	}
	for range 2 {
		ch := make(chan os.Signal, 8)
		release, err := tapSignals(ch, nil, []syscall.Signal{unix.SIGPIPE, unix.SIGUSR1})
		if err != nil {
			t.Fatal(err)
		}
		writeToClosedPipe(t)
		killFromAnother(t, unix.SIGPIPE)
		nextTapped(t, ch, unix.SIGPIPE)
		release()
	}
}

// TestTapFaults: a fault this process causes is still a panic (the
// runtime's handler gets it), while SIGSEGV or SIGILL sent by another
// process is a signal to pass on, not a crash (the runtime would throw on
// a SIGILL nobody asked for).
func TestTapFaults(t *testing.T) {
	ch := make(chan os.Signal, 8)
	tapOrSkip(t, ch, unix.SIGSEGV, unix.SIGILL, unix.SIGBUS)
	panicked := func() (p any) {
		defer func() { p = recover() }()
		var m *struct{ x int }
		m.x = 1 // a SIGSEGV
		return nil
	}()
	if panicked == nil {
		t.Fatal("a nil dereference did not panic under the tap")
	}
	for _, sig := range []syscall.Signal{unix.SIGSEGV, unix.SIGILL, unix.SIGBUS} {
		killFromAnother(t, sig)
		nextTapped(t, ch, sig)
	}
}

// TestTapOwnsSignals: a signal the runtime has no use for (SIGTERM would
// otherwise end the process, SIGUSR2 be dropped) comes out of the tap
// whoever sent it, the kernel included; release gives it back, so that
// os/signal works again afterwards.
func TestTapOwnsSignals(t *testing.T) {
	if !tapSupported {
		t.Skip("no signal tap on this architecture")
	}
	ch := make(chan os.Signal, 8)
	release, err := tapSignals(ch, nil, []syscall.Signal{unix.SIGTERM, unix.SIGUSR2, unix.SIGWINCH})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tapSignals(make(chan os.Signal, 1), nil, []syscall.Signal{unix.SIGUSR1}); err == nil {
		t.Fatal("a second tap was installed while the first holds the signals")
	}
	killFromAnother(t, unix.SIGTERM)
	nextTapped(t, ch, unix.SIGTERM)
	if err := unix.Kill(os.Getpid(), unix.SIGUSR2); err != nil { // sent by ourselves: still ours
		t.Fatal(err)
	}
	nextTapped(t, ch, unix.SIGUSR2)
	killFromAnother(t, unix.SIGWINCH)
	nextTapped(t, ch, unix.SIGWINCH)
	release()

	n := make(chan os.Signal, 1)
	signal.Notify(n, unix.SIGUSR2)
	defer signal.Stop(n)
	killFromAnother(t, unix.SIGUSR2)
	select {
	case s := <-n:
		if s != unix.SIGUSR2 {
			t.Fatalf("os/signal got %v", s)
		}
	case s := <-ch:
		t.Fatalf("the released tap still passed on %v", s)
	case <-time.After(30 * time.Second):
		t.Fatal("SIGUSR2 did not reach os/signal after the tap was released")
	}
}

// TestCatchSignalsFallsBack: where the tap cannot be had (here: it is
// taken), catchSignals still delivers through os/signal.
func TestCatchSignalsFallsBack(t *testing.T) {
	ch := make(chan os.Signal, 8)
	tapOrSkip(t, ch, unix.SIGUSR1)
	other := make(chan os.Signal, 8)
	release, tapped := catchSignals(other, nil, []syscall.Signal{unix.SIGUSR2, unix.SIGURG}, false, slog.New(slog.DiscardHandler))
	if tapped {
		t.Fatal("catchSignals says it has the tap another holds")
	}
	defer release()
	killFromAnother(t, unix.SIGUSR2)
	select {
	case s := <-other:
		if got, tapped := received(s); got != unix.SIGUSR2 || tapped {
			t.Fatalf("got %v (tapped %v), want SIGUSR2 through os/signal", got, tapped)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("SIGUSR2 did not arrive through os/signal")
	}
}

// TestTapKeepsSIGCHLDInAFlood: with the pipe full of other signals (the
// reader held up) a SIGCHLD's record does not fit, yet the exit is not
// lost: the reaper must hear of it, or it would wait for the next one.
func TestTapKeepsSIGCHLDInAFlood(t *testing.T) {
	out, chld := make(chan os.Signal, 8), make(chan os.Signal, 1)
	if !tapSupported {
		t.Skip("no signal tap on this architecture")
	}
	release, err := tapSignals(out, chld, []syscall.Signal{unix.SIGUSR1, unix.SIGCHLD})
	if err != nil {
		t.Fatal(err)
	}
	defer release()

	tap.mu.Lock() // the reader stops after one read
	held := true
	defer func() {
		if held {
			tap.mu.Unlock()
		}
	}()
	var pipeSize int
	if n, err := unix.FcntlInt(uintptr(tapFD), unix.F_GETPIPE_SZ, 0); err != nil {
		t.Fatal(err)
	} else {
		pipeSize = n
	}
	// More records than the pipe holds, and then some the reader took.
	for range pipeSize/siginfoSize + 64 {
		if err := unix.Kill(os.Getpid(), unix.SIGUSR1); err != nil {
			t.Fatal(err)
		}
	}
	child := exec.Command("true")
	if err := child.Run(); err != nil { // its SIGCHLD finds the pipe full
		t.Fatal(err)
	}
	tap.mu.Unlock()
	held = false
	select {
	case s := <-chld:
		if got, _ := received(s); got != unix.SIGCHLD {
			t.Fatalf("got %v on the SIGCHLD channel", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the SIGCHLD of a child that exited during a flood was lost")
	}
}

// writeToClosedPipe makes the kernel send this process a SIGPIPE of its
// own: a write to a pipe whose reader is gone.
func writeToClosedPipe(t *testing.T) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if _, err := w.Write([]byte("x")); err == nil {
		t.Fatal("write to a pipe without reader succeeded")
	}
	w.Close()
}

// TestTapForwardsFromTheHandler: armed, the trampoline itself forwards a
// signal (after the rewrite its table holds) to the target, with the
// reader held up so that the Go side could not have; the record then says
// so. A stop request sets the stop flag; disarmed, nothing is forwarded.
func TestTapForwardsFromTheHandler(t *testing.T) {
	if !tapSupported {
		t.Skip("no signal tap on this architecture")
	}
	// Room for what an earlier test left in the pipe (a full pipe's worth
	// at most): a full channel drops.
	out := make(chan os.Signal, 1024)
	release, err := tapSignals(out, nil, []syscall.Signal{unix.SIGUSR2, unix.SIGHUP, unix.SIGINT})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	tapSetForwarding(func(sig syscall.Signal) syscall.Signal {
		switch sig {
		case unix.SIGUSR2:
			return unix.SIGTERM // a rewrite
		case unix.SIGINT:
			return unix.SIGINT
		}
		return 0 // SIGHUP: the Go side decides
	}, true)
	defer tapSetTarget(0)

	for _, c := range []struct {
		sent, want syscall.Signal
		stop       bool
	}{{unix.SIGUSR2, unix.SIGTERM, false}, {unix.SIGINT, unix.SIGINT, true}} {
		child := exec.Command("sleep", "1000")
		if err := child.Start(); err != nil {
			t.Fatal(err)
		}
		pid := child.Process.Pid
		tapSetTarget(pid)

		tap.mu.Lock() // nothing comes out of the pipe meanwhile
		killFromAnother(t, c.sent)
		var info unix.Siginfo
		waited := make(chan error, 1)
		go func() { waited <- unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil) }()
		select {
		case err := <-waited:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(30 * time.Second):
			child.Process.Kill()
			tap.mu.Unlock()
			t.Fatalf("%v: the child was not signalled while the Go side was held up", c.sent)
		}
		tapSetTarget(0) // before it is reaped
		tap.mu.Unlock()
		err := child.Wait()
		ws, _ := child.ProcessState.Sys().(syscall.WaitStatus)
		if !ws.Signaled() || ws.Signal() != c.want {
			t.Fatalf("%v: the child ended with %v, want killed by %v", c.sent, err, c.want)
		}
		if done, err := forwardedByTap(nextRecord(t, out, c.sent)); !done || err != nil {
			t.Fatalf("%v: record says forwarded %v (%v), want forwarded", c.sent, done, err)
		}
		if got := tapStopRequested(); got != c.stop {
			t.Fatalf("after %v the stop flag is %v, want %v", c.sent, got, c.stop)
		}
	}

	// Not asked for every record: a signal kill(2) sent leaves none (the
	// HUP below, which the Go side must see, comes first).
	tapSetForwarding(func(sig syscall.Signal) syscall.Signal {
		if sig == unix.SIGUSR2 {
			return unix.SIGTERM
		}
		return 0
	}, false)
	child := exec.Command("sleep", "1000")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	tapSetTarget(child.Process.Pid)
	killFromAnother(t, unix.SIGUSR2)
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, child.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatal(err)
	}
	tapSetTarget(0)
	if err := child.Wait(); err == nil {
		t.Fatal("the child was not killed")
	}
	killFromAnother(t, unix.SIGHUP)
	deadline := time.After(30 * time.Second)
	for hup := false; !hup; {
		select {
		case s := <-out:
			switch got, _ := received(s); got {
			case unix.SIGUSR2:
				t.Fatal("a record of a forwarded USR2 nobody asked for")
			case unix.SIGHUP:
				hup = true
			}
		case <-deadline:
			t.Fatal("no record of SIGHUP")
		}
	}

	// Disarmed, or a signal the table leaves to Go: a plain record.
	for _, sig := range []syscall.Signal{unix.SIGUSR2, unix.SIGHUP} {
		killFromAnother(t, sig)
		if done, _ := forwardedByTap(nextRecord(t, out, sig)); done {
			t.Fatalf("%v was forwarded with no target", sig)
		}
	}
}

// nextRecord waits for the tap's record of want; records of other signals
// are an earlier test's, still in the pipe (the tap outlives its holders).
func nextRecord(t *testing.T, out <-chan os.Signal, want syscall.Signal) os.Signal {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case s := <-out:
			if got, _ := received(s); got == want {
				return s
			}
		case <-deadline:
			t.Fatalf("no record of %v", want)
			return nil
		}
	}
}
