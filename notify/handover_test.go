package notify

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/supervise-dev/supervise/clock/fakeclock"
)

// privateSocket is a socket as the supervisor makes one, below a base of
// the test's.
func privateSocket(t *testing.T) (base string, s *Socket) {
	t.Helper()
	base = t.TempDir()
	s, err := ListenPrivate(base, "web", nil)
	if err != nil {
		t.Fatal(err)
	}
	return base, s
}

// A socket handed over loses nothing: the messages read before the
// detach are all delivered, what is sent while detached waits in the
// socket for the next reader, and the file stays the same all along.
func TestSocketHandoverLosesNothing(t *testing.T) {
	base, old := privateSocket(t)
	defer old.Release() // the old binary's, which an exec would drop
	path := old.Path()
	sender, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer sender.Close()
	send := func(m string) {
		if _, err := sender.Write([]byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	before, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	send("STATUS=one")
	if m := recvMsg(t, old); m.Status != "one" {
		t.Fatalf("got %q", m.Status)
	}
	// Perhaps read, not yet taken, when the detach comes: the consumer
	// then still gets it; else it waits in the socket.
	send("STATUS=two")
	msgs := old.Messages()
	var got []string
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for m := range msgs {
			got = append(got, m.Status)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	f, err := old.Detach(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	waitClosed(t, drained, "Messages closed after the detach")
	send("STATUS=three") // between binaries
	send("STATUS=four\nREADY=1")
	adopted, err := AdoptSocket(base, path, f)
	if err != nil {
		t.Fatal(err)
	}
	adopted.Resume()
	for len(got) < 3 {
		m := recvMsg(t, adopted)
		if m.Pid != os.Getpid() {
			t.Errorf("%+v: sender pid %d, want ours (%d): credentials after the hand-over", m, m.Pid, os.Getpid())
		}
		got = append(got, m.Status)
	}
	if strings.Join(got, ",") != "two,three,four" {
		t.Errorf("messages across the hand-over: %q, want two, three, four in order", got)
	}
	after, err := os.Lstat(path)
	if err != nil || !os.SameFile(before, after) {
		t.Fatalf("the socket file changed across the hand-over: %v", err)
	}
	if err := adopted.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, filepath.Dir(path)} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s after Close: %v, want removed", p, err)
		}
	}
}

// A detach whose hand-over did not happen reads on, on a new channel.
func TestSocketResumeAfterDetach(t *testing.T) {
	_, s := privateSocket(t)
	defer s.Close()
	msgs := s.Messages()
	go func() {
		for range msgs {
		}
	}()
	f, err := s.Detach(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if s.Pending() {
		t.Fatal("Pending with nothing sent")
	}
	if err := Send(s.Path(), "READY=1"); err != nil {
		t.Fatal(err)
	}
	// Unread, in the kernel's queue: on its way, for the watchdog.
	if !s.Pending() {
		t.Error("not Pending with a datagram in the socket's queue")
	}
	s.Resume()
	if m := recvMsg(t, s); !m.Ready {
		t.Errorf("after Resume: %+v, want the READY=1 sent while detached", m)
	}
	// The reader clears its mark just after the hand-off: wait for it.
	for deadline := time.Now().Add(10 * time.Second); s.Pending(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("Pending 10 s after the only message was delivered")
		}
	}
}

// AdoptSocket takes the state's word for nothing: the descriptor must be
// a unix datagram socket bound to the path named, the path a socket file
// named notify in a directory of ours right below the base; and Close
// would remove that path.
func TestAdoptSocketRefusesWhatIsNotOurs(t *testing.T) {
	base, s := privateSocket(t)
	defer s.Close()
	f, err := s.conn.File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	other, err := ListenPrivate(base, "other", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	stream, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(t.TempDir(), "notify"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	sf, err := stream.File()
	if err != nil {
		t.Fatal(err)
	}
	defer sf.Close()
	streamBase := filepath.Dir(filepath.Dir(stream.Addr().String()))
	outside := filepath.Join(t.TempDir(), "x", "notify")

	cases := []struct {
		name, base, path string
		f                *os.File
		want             string
	}{
		{"relative path", base, "web/notify", f, "not one of the private sockets"},
		{"unclean path", base, filepath.Dir(s.Path()) + "/../" + filepath.Base(filepath.Dir(s.Path())) + "/notify", f, "not one of the private sockets"},
		{"another base", t.TempDir(), s.Path(), f, "not one of the private sockets"},
		{"another name", base, filepath.Join(filepath.Dir(s.Path()), "other"), f, "not one of the private sockets"},
		{"outside the base", base, outside, f, "not one of the private sockets"},
		{"the socket of another path", base, other.Path(), f, "not the socket bound there"},
		{"a pipe", base, s.Path(), r, "not a unix datagram socket"},
		{"a stream socket", streamBase, stream.Addr().String(), sf, "not a unix datagram socket"},
	}
	for _, c := range cases {
		got, err := AdoptSocket(c.base, c.path, c.f)
		if err == nil {
			got.Release()
			t.Errorf("%s: adopted", c.name)
		} else if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	// The file gone: nothing to take over (nor to remove later).
	if err := os.Rename(s.Path(), s.Path()+".moved"); err != nil {
		t.Fatal(err)
	}
	if got, err := AdoptSocket(base, s.Path(), f); err == nil || !strings.Contains(err.Error(), "not the socket bound there") && !strings.Contains(err.Error(), "gone") {
		if got != nil {
			got.Release()
		}
		t.Errorf("a socket whose file was moved: %v", err)
	}
	if err := os.Rename(s.Path()+".moved", s.Path()); err != nil {
		t.Fatal(err)
	}
	// Released, the file stays for the one still holding the socket.
	got, err := AdoptSocket(base, s.Path(), f)
	if err != nil {
		t.Fatal(err)
	}
	got.Release()
	var st syscall.Stat_t
	if err := syscall.Lstat(s.Path(), &st); err != nil {
		t.Errorf("Release removed the socket file: %v", err)
	}
}

// The notify fd's pipe handed over: a newline written before the detach
// makes it ready on both sides; one written while detached waits in the
// pipe for the next reader; a resumed reader reads on.
func TestFDHandover(t *testing.T) {
	ctx := context.Background()
	t.Run("ready before", func(t *testing.T) {
		f, w, err := NewFD()
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		w.Write([]byte("ready\n"))
		waitClosed(t, f.Ready(), "ready")
		r, ready, err := f.Detach(ctx)
		if err != nil || r == nil || !ready {
			t.Fatalf("Detach = %v, %v, %v; want the read end, ready", r, ready, err)
		}
		w.Write([]byte("more, while detached\n")) // no SIGPIPE: the read end is open
		g := AdoptFD(r, ready)
		defer g.Close()
		if !isClosed(g.Ready()) {
			t.Error("adopted as ready, not ready")
		}
	})
	t.Run("ready while detached", func(t *testing.T) {
		f, w, err := NewFD()
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		w.Write([]byte("starting"))
		r, ready, err := f.Detach(ctx)
		if err != nil || r == nil || ready {
			t.Fatalf("Detach = %v, %v, %v; want the read end, not ready", r, ready, err)
		}
		w.Write([]byte(" done\n"))
		time.Sleep(10 * time.Millisecond) // a stopped reader would have had the time to misread it
		if isClosed(f.Ready()) {
			t.Fatal("the detached FD read on")
		}
		g := AdoptFD(r, false)
		defer g.Close()
		waitClosed(t, g.Ready(), "the adopted FD ready on the newline sent between binaries")
	})
	t.Run("resumed", func(t *testing.T) {
		f, w, err := NewFD()
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		defer w.Close()
		if _, _, err := f.Detach(ctx); err != nil {
			t.Fatal(err)
		}
		w.Write([]byte("\n"))
		f.Resume()
		waitClosed(t, f.Ready(), "ready after Resume")
	})
	t.Run("every writer gone", func(t *testing.T) {
		f, w, err := NewFD()
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		w.Write([]byte("\n"))
		w.Close()
		waitClosed(t, f.Ready(), "ready")
		// Wait for the reader to meet the end of file.
		waitClosed(t, f.readerDone(), "the reader at EOF")
		r, ready, err := f.Detach(ctx)
		if err != nil || r != nil || !ready {
			t.Fatalf("Detach = %v, %v, %v; want no read end (nothing more can come), ready", r, ready, err)
		}
	})
}

// A watchdog handed over goes on with its deadline: not a fresh interval
// for a program that stopped pinging, and the time the exec took counted.
func TestWatchdogStateCarriesTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		restore := func(st WatchdogState) (*atomic.Int32, func(time.Duration)) {
			c := fakeclock.New(t0)
			var fired atomic.Int32
			w := RestoreWatchdog(c, st, nil, func() { fired.Add(1) })
			t.Cleanup(w.Stop)
			synctest.Wait()
			return &fired, func(at time.Duration) {
				c.SetTime(t0.Add(at))
				synctest.Wait()
			}
		}
		_, w, _, stepTo := watchdogEnv(t, 30*time.Second)
		stepTo(20 * time.Second) // the last ping 20 s ago
		st := w.State()
		if !st.Armed || st.Left != 10*time.Second || st.Timeout != 30*time.Second {
			t.Fatalf("State = %+v, want armed, 10s of 30s left", st)
		}
		// Exactly the deadline, the exec's time aside.
		st.Taken = 0
		fired, at := restore(st)
		at(10*time.Second - time.Millisecond)
		if fired.Load() != 0 {
			t.Fatal("fired before the deadline")
		}
		at(10 * time.Second)
		if fired.Load() != 1 {
			t.Fatal("did not fire at the deadline")
		}
		// The exec took 4 s (of the monotonic clock, which the fake one
		// does not move): 6 s are left.
		st.Taken = monotonicNow() - int64(4*time.Second)
		fired, at = restore(st)
		at(5 * time.Second)
		if fired.Load() != 0 {
			t.Fatal("fired 5 s after the take-over, 1 s before the deadline")
		}
		at(6 * time.Second)
		if fired.Load() != 1 {
			t.Fatal("did not fire at the deadline, the exec's 4 s counted")
		}
		// Kicked after the take-over: a full interval again.
		st.Taken = 0
		c2 := fakeclock.New(t0)
		var n atomic.Int32
		w2 := RestoreWatchdog(c2, st, nil, func() { n.Add(1) })
		defer w2.Stop()
		c2.SetTime(t0.Add(9 * time.Second))
		w2.Kick()
		c2.SetTime(t0.Add(38 * time.Second))
		synctest.Wait()
		if n.Load() != 0 {
			t.Fatal("a kick after the take-over did not restart the countdown")
		}
		c2.SetTime(t0.Add(39 * time.Second))
		synctest.Wait()
		if n.Load() != 1 {
			t.Fatal("no fire a full interval after the kick")
		}
	})
}

// A watchdog that fired before the exec fires again at once after it; one
// disarmed never does; a state claiming more than the timeout is held to
// the timeout.
func TestWatchdogStateEdges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, w, fired, stepTo := watchdogEnv(t, 30*time.Second)
		stepTo(30 * time.Second)
		if fired.Load() != 1 {
			t.Fatal("did not fire")
		}
		st := w.State()
		if !st.Armed || st.Left != 0 {
			t.Fatalf("fired: State = %+v, want armed with nothing left", st)
		}
		var again atomic.Int32
		w2 := RestoreWatchdog(fakeclock.New(t0), st, nil, func() { again.Add(1) })
		defer w2.Stop()
		synctest.Wait()
		if again.Load() != 1 {
			t.Fatal("a watchdog that fired before the exec did not fire at once after it")
		}

		tw := NewWatchdog(fakeclock.New(t0), 30*time.Second, nil, func() {})
		tw.SetTimeout(0)
		if st := tw.State(); st.Armed {
			t.Fatalf("disarmed: State = %+v, want not armed", st)
		}
		c3 := fakeclock.New(t0)
		var never atomic.Int32
		w3 := RestoreWatchdog(c3, WatchdogState{Timeout: 30 * time.Second}, nil, func() { never.Add(1) })
		defer w3.Stop()
		c3.SetTime(t0.Add(time.Hour))
		synctest.Wait()
		if never.Load() != 0 || c3.HasWaiters() {
			t.Fatal("a disarmed watchdog restored fired or waits")
		}

		c4 := fakeclock.New(t0)
		w4 := RestoreWatchdog(c4, WatchdogState{Timeout: 30 * time.Second, Armed: true, Left: 1000 * time.Hour}, nil, func() {})
		defer w4.Stop()
		if at, ok := c4.NextWakeup(); !ok || at.After(t0.Add(30*time.Second)) {
			t.Fatalf("a state with 1000h left of 30s: fires at %v, want by t0+30s", at)
		}
	})
}
