package rungroup

import (
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
)

// waiter is an actor that runs until interrupted, then takes a while (a
// few hundred scheduler turns) to return, so that a Run that did not wait
// for it would be caught.
type waiter struct {
	stop        chan struct{}
	interrupted atomic.Int32
	got         error
	returned    atomic.Bool
}

func newWaiter() *waiter { return &waiter{stop: make(chan struct{})} }

func (w *waiter) execute() error {
	<-w.stop
	for range 500 {
		runtime.Gosched()
	}
	w.returned.Store(true)
	return errors.New("interrupted")
}

func (w *waiter) interrupt(err error) {
	if w.interrupted.Add(1) == 1 {
		w.got = err
		close(w.stop)
	}
}

func TestEmpty(t *testing.T) {
	var g Group
	if err := g.Run(); err != nil {
		t.Fatalf("Run of no actors = %v, want nil", err)
	}
}

func TestFirstReturnInterruptsAll(t *testing.T) {
	var g Group
	ws := make([]*waiter, 20)
	for i := range ws {
		ws[i] = newWaiter()
		g.Add(ws[i].execute, ws[i].interrupt)
	}
	first := errors.New("done")
	var firstInterrupted atomic.Int32
	var firstGot error
	g.Add(func() error { return first }, func(err error) { firstInterrupted.Add(1); firstGot = err })

	if err := g.Run(); err != first {
		t.Fatalf("Run = %v, want the first actor's error %v", err, first)
	}
	for i, w := range ws {
		if !w.returned.Load() {
			t.Errorf("actor %d had not returned when Run did", i)
		}
		if n := w.interrupted.Load(); n != 1 {
			t.Errorf("actor %d interrupted %d times, want 1", i, n)
		}
		if w.got != first {
			t.Errorf("actor %d interrupted with %v, want %v", i, w.got, first)
		}
	}
	// The actor that ended the group is interrupted too, once.
	if n := firstInterrupted.Load(); n != 1 || firstGot != first {
		t.Errorf("the first actor: interrupted %d times with %v, want once with %v", n, firstGot, first)
	}
}

// TestNilEndsTheGroup: an actor returning nil ends the group as an error
// does, and Run returns nil even when the others then return errors.
func TestNilEndsTheGroup(t *testing.T) {
	var g Group
	w := newWaiter()
	g.Add(w.execute, w.interrupt)
	g.Add(func() error { return nil }, func(error) {})
	if err := g.Run(); err != nil {
		t.Fatalf("Run = %v, want nil (the first return's)", err)
	}
	if !w.returned.Load() || w.got != nil {
		t.Fatalf("the waiter: returned %v, interrupted with %v; want returned, nil", w.returned.Load(), w.got)
	}
}

// TestPanic: a panicking actor ends the group; the others are interrupted
// with a *PanicError and have returned by the time Run panics again.
func TestPanic(t *testing.T) {
	var g Group
	w := newWaiter()
	g.Add(w.execute, w.interrupt)
	g.Add(func() error { panic("boom") }, func(error) {})

	defer func() {
		v := recover()
		p, ok := v.(*PanicError)
		if !ok {
			t.Fatalf("Run's panic = %#v, want a *PanicError", v)
		}
		if p.Value != "boom" || len(p.Stack) == 0 {
			t.Errorf("PanicError{Value: %v, %d bytes of stack}, want boom and a stack", p.Value, len(p.Stack))
		}
		if !w.returned.Load() {
			t.Error("the other actor had not returned when Run panicked")
		}
		if pe, ok := w.got.(*PanicError); !ok || pe != p {
			t.Errorf("the other actor was interrupted with %v, want the panic", w.got)
		}
	}()
	err := g.Run()
	t.Fatalf("Run returned %v, want a panic", err)
}

// TestLaterPanic: a panic in an actor that returns after the first one
// (while shutting down) is not swallowed either.
func TestLaterPanic(t *testing.T) {
	var g Group
	stop := make(chan struct{})
	g.Add(func() error { <-stop; panic("while stopping") }, func(error) { close(stop) })
	g.Add(func() error { return errors.New("first") }, func(error) {})
	defer func() {
		if p, ok := recover().(*PanicError); !ok || p.Value != "while stopping" {
			t.Fatalf("Run's panic = %v, want the later actor's", p)
		}
	}()
	err := g.Run()
	t.Fatalf("Run returned %v, want a panic", err)
}
