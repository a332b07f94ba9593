package pid1

import (
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestSentByAnother(t *testing.T) {
	const self = 100
	for _, c := range []struct {
		code, pid int32
		want      bool
	}{
		{0, 200, true},    // kill(2) from another process
		{0, 0, true},      // kill(2) from outside our pid namespace
		{-1, 200, true},   // sigqueue
		{-6, 200, true},   // tgkill from another process
		{-6, self, false}, // the Go scheduler's preemption tgkill
		{0, self, false},  // the kernel's SIGPIPE for our own write
		{0x80, 0, false},  // SI_KERNEL: a timer, a socket's OOB data
		{2, 0, false},     // SI_TIMER
	} {
		if got := sentByAnother(c.code, c.pid, self); got != c.want {
			t.Errorf("si_code %d si_pid %d: sentByAnother %v, want %v", c.code, c.pid, got, c.want)
		}
	}
}

// TestTapPassesOnlySentSignals: SIGPIPE, SIGURG and SIGPROF sent by
// another process (kill(1)) come out of the tap; those this process
// causes (the scheduler's preemption SIGURGs, SIGPIPE from writing to a
// closed pipe, a signal it sends itself) do not.
func TestTapPassesOnlySentSignals(t *testing.T) {
	if !tapSupported {
		t.Skip("no signal tap on this architecture")
	}
	ch := make(chan os.Signal, 64)
	// As Run does: SIGPIPE must be asked for, or a write to a closed
	// stdout would end the process.
	signal.Notify(ch, unix.SIGPIPE)
	defer signal.Stop(ch)
	untap, err := subscribeTap(ch)
	if err != nil {
		t.Fatal(err)
	}
	defer untap()

	// What we cause: preemption (goroutines spinning past the 10 ms
	// slice), a write to a pipe whose reader is gone, a kill of ourselves.
	// The tap sees them (tapOwn) and must drop them.
	own := tapOwn.Load()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if _, err := w.Write([]byte("x")); err == nil {
		t.Fatal("write to a pipe without reader succeeded")
	}
	w.Close()
	if err := unix.Kill(os.Getpid(), unix.SIGURG); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	for range 4 {
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
	for tapOwn.Load() < own+5 { // SIGPIPE, our SIGURG, 3 preemptions at least
		if time.Now().After(deadline) {
			t.Fatalf("the tap saw %d signals this process caused, want 5 or more", tapOwn.Load()-own)
		}
		runtime.Gosched()
	}
	close(stop)

	// What another process sends.
	for _, sig := range tappedSignals {
		name := unix.SignalName(sig)[3:]
		if out, err := exec.Command("kill", "-"+name, strconv.Itoa(os.Getpid())).CombinedOutput(); err != nil {
			t.Fatalf("kill -%s: %v %s", name, err, out)
		}
		deadline := time.After(30 * time.Second)
	wait:
		for {
			select {
			case s := <-ch:
				got, tapped := received(s)
				if !tapped {
					continue // os/signal's SIGPIPE: Run drops those
				}
				if got != sig {
					t.Fatalf("the tap passed on %v before the %v another process sent (one this process caused?)", got, sig)
				}
				break wait
			case <-deadline:
				t.Fatalf("%v sent by kill(1) did not come out of the tap", sig)
			}
		}
	}
	for {
		select {
		case s := <-ch:
			if got, tapped := received(s); tapped {
				t.Errorf("the tap passed on an extra %v", got)
			}
		default:
			return
		}
	}
}
