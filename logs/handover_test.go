package logs

import (
	"context"
	"slices"
	"testing"
	"time"
)

// A Detach stops the pump between two reads: the complete lines are
// written, the begun one is handed over, what is still in the pipe stays
// there, and an Adopt on another Program (the new binary's) goes on from
// there: no line lost, none twice, none cut.
func TestDetachAndAdoptKeepEveryByte(t *testing.T) {
	ring1 := NewRing(RingConfig{Program: "web", Size: 100})
	p1, err := NewProgram(ProgramConfig{Name: "web", Ring: ring1})
	if err != nil {
		t.Fatal(err)
	}
	w, err := p1.NewPipe(Stdout)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteString("one\ntwo\nthr"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for len(ring1.Last(-1)) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the pump did not write the first lines")
		}
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	ds, err := p1.Detach(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 || string(ds[0].Pending) != "thr" || ds[0].Stream != Stdout {
		t.Fatalf("Detach = %+v, want the stdout pipe with \"thr\" pending", ds)
	}
	// Written while nobody reads: it waits in the pipe.
	if _, err := w.WriteString("ee\nfour\n"); err != nil {
		t.Fatal(err)
	}
	if got := texts(ring1.Last(-1)); !slices.Equal(got, []string{"one", "two"}) {
		t.Fatalf("before the hand-over the ring has %q", got)
	}
	ring2 := NewRing(RingConfig{Program: "web", Size: 100})
	p2, err := NewProgram(ProgramConfig{Name: "web", Ring: ring2})
	if err != nil {
		t.Fatal(err)
	}
	p2.Adopt(ds[0].Stream, ds[0].File, ds[0].Pending)
	if _, err := w.WriteString("five"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	closeProgram(t, p2)
	closeProgram(t, p1)
	if got := texts(ring2.Last(-1)); !slices.Equal(got, []string{"three", "four", "five"}) {
		t.Errorf("after the hand-over the ring has %q, want three, four, five", got)
	}
}

// Resume undoes a Detach whose hand-over did not happen.
func TestDetachThenResume(t *testing.T) {
	ring := NewRing(RingConfig{Program: "web", Size: 100})
	p, err := NewProgram(ProgramConfig{Name: "web", Ring: ring})
	if err != nil {
		t.Fatal(err)
	}
	w, err := p.NewPipe(Stdout)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteString("a\nb"); err != nil {
		t.Fatal(err)
	}
	ds, err := p.Detach(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	p.Resume(ds)
	if _, err := w.WriteString("c\n"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	closeProgram(t, p)
	if got := texts(ring.Last(-1)); !slices.Equal(got, []string{"a", "bc"}) {
		t.Errorf("ring has %q, want a, bc", got)
	}
}
