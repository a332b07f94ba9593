package logs

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"
)

// texts returns the texts of lines.
func texts(lines []Line) []string {
	var out []string
	for _, l := range lines {
		out = append(out, l.Text)
	}
	return out
}

func numbers(from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, strconv.Itoa(i))
	}
	return out
}

// receive reads n lines from ch, failing the test after a generous wait.
func receive(t *testing.T, ch <-chan Line, n int) []Line {
	t.Helper()
	var out []Line
	deadline := time.After(time.Minute)
	for len(out) < n {
		select {
		case l, ok := <-ch:
			if !ok {
				t.Fatalf("channel closed after %d lines, want %d: %q", len(out), n, texts(out))
			}
			out = append(out, l)
		case <-deadline:
			t.Fatalf("got %d lines in a minute, want %d", len(out), n)
		}
	}
	return out
}

// closed waits for ch to close, failing on any line.
func closed(t *testing.T, ch <-chan Line) {
	t.Helper()
	select {
	case l, ok := <-ch:
		if ok {
			t.Fatalf("got %q, want the channel closed", l.Text)
		}
	case <-time.After(time.Minute):
		t.Fatal("channel still open after a minute")
	}
}

func TestRingLast(t *testing.T) {
	r := NewRing(RingConfig{Size: 5})
	if got := r.Last(3); len(got) != 0 {
		t.Fatalf("empty ring: Last(3) = %q", texts(got))
	}
	for i := 1; i <= 3; i++ {
		r.WriteLine(Line{Text: strconv.Itoa(i)})
	}
	if got := texts(r.Last(-1)); !slices.Equal(got, numbers(1, 3)) {
		t.Fatalf("Last(-1) = %q before wrapping", got)
	}
	for i := 4; i <= 8; i++ {
		r.WriteLine(Line{Text: strconv.Itoa(i)})
	}
	for _, tc := range []struct {
		n    int
		want []string
	}{
		{0, nil},
		{1, numbers(8, 8)},
		{3, numbers(6, 8)},
		{5, numbers(4, 8)},
		{100, numbers(4, 8)},
		{-1, numbers(4, 8)},
	} {
		if got := texts(r.Last(tc.n)); !slices.Equal(got, tc.want) {
			t.Errorf("Last(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

// Follow sends the history and then the new lines, with no gap and no
// repeat, and closes when cancelled.
func TestRingFollow(t *testing.T) {
	r := NewRing(RingConfig{Size: 10})
	for i := 1; i <= 4; i++ {
		r.WriteLine(Line{Text: strconv.Itoa(i)})
	}
	ch, cancel := r.Follow(t.Context(), 2)
	for i := 5; i <= 7; i++ {
		r.WriteLine(Line{Text: strconv.Itoa(i)})
	}
	if got := texts(receive(t, ch, 5)); !slices.Equal(got, numbers(3, 7)) {
		t.Fatalf("got %q, want 3…7", got)
	}
	cancel()
	closed(t, ch)
	r.WriteLine(Line{Text: "8"}) // nobody follows: must not block
	r.Close()
	r.Wait()
}

func TestRingFollowContext(t *testing.T) {
	r := NewRing(RingConfig{})
	ctx, stop := context.WithCancel(t.Context())
	ch, cancel := r.Follow(ctx, 0)
	defer cancel()
	stop()
	closed(t, ch)
	r.Wait()
}

// Close ends followers after the lines queued for them; Follow after Close
// gives the history and ends.
func TestRingClose(t *testing.T) {
	r := NewRing(RingConfig{})
	ch, cancel := r.Follow(t.Context(), 0)
	defer cancel()
	r.WriteLine(Line{Text: "1"})
	r.WriteLine(Line{Text: "2"})
	r.Close()
	if got := texts(receive(t, ch, 2)); !slices.Equal(got, numbers(1, 2)) {
		t.Fatalf("got %q, want 1 2", got)
	}
	closed(t, ch)
	ch2, cancel2 := r.Follow(t.Context(), -1)
	defer cancel2()
	if got := texts(receive(t, ch2, 2)); !slices.Equal(got, numbers(1, 2)) {
		t.Fatalf("after Close: got %q, want 1 2", got)
	}
	closed(t, ch2)
	r.Wait()
}

// A follower that does not read never blocks the writers; when it reads
// again it gets what was queued, then a marker counting exactly the lines
// it missed, then the end.
func TestRingSlowFollower(t *testing.T) {
	r := NewRing(RingConfig{Program: "web", Size: 100, FollowBuffer: 10})
	slow, cancelSlow := r.Follow(t.Context(), 0)
	defer cancelSlow()
	const total = 10000
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 1; i <= total; i++ {
			r.WriteLine(Line{Program: "web", Text: strconv.Itoa(i)})
		}
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("writing blocked on a follower that does not read")
	}
	var got []Line
	for l := range slow {
		got = append(got, l)
	}
	if len(got) < 2 {
		t.Fatalf("got %q, want lines and a marker", texts(got))
	}
	lines, marker := got[:len(got)-1], got[len(got)-1]
	if n := len(lines); n < 10 || n > 21 {
		t.Errorf("follower got %d lines, want its buffer's worth (10 to 21)", n)
	}
	if want := numbers(1, len(lines)); !slices.Equal(texts(lines), want) {
		t.Errorf("follower got %q, want 1…%d in order", texts(lines), len(lines))
	}
	want := fmt.Sprintf("follower lagged, %d lines skipped", total-len(lines))
	if marker.Stream != StreamLagged || marker.Text != want || marker.Program != "web" {
		t.Errorf("marker %+v, want stream %q text %q program web", marker, StreamLagged, want)
	}
	// The ring itself kept the last lines.
	if got := texts(r.Last(3)); !slices.Equal(got, numbers(total-2, total)) {
		t.Errorf("Last(3) = %q", got)
	}
	r.Wait()
}

// A follower that keeps up is not disturbed by one that does not.
func TestRingFastAndSlowFollowers(t *testing.T) {
	r := NewRing(RingConfig{FollowBuffer: 5})
	slow, cancelSlow := r.Follow(t.Context(), 0)
	defer cancelSlow()
	fast, cancelFast := r.Follow(t.Context(), 0)
	defer cancelFast()
	const total = 2000
	for i := 1; i <= total; i++ {
		r.WriteLine(Line{Text: strconv.Itoa(i)})
		// Wait for the fast follower to have each line before the next:
		// it never falls behind, whatever the machine's speed.
		if l := receive(t, fast, 1)[0]; l.Text != strconv.Itoa(i) {
			t.Fatalf("fast follower got %q, want %d", l.Text, i)
		}
	}
	cancelFast()
	closed(t, fast)
	var n int
	var last Line
	for l := range slow {
		n++
		last = l
	}
	if last.Stream != StreamLagged || n > 12 {
		t.Errorf("slow follower: %d lines ending with %+v, want a few and a marker", n, last)
	}
	r.Wait()
}

// The ring keeps lines while they fit in MaxBytes: big lines push the
// oldest out, the newest line stays even when it is bigger than the
// bound, and small lines fill the ring again up to its line count.
func TestRingBoundedByBytes(t *testing.T) {
	const maxBytes = 10 << 10
	r := NewRing(RingConfig{Size: 50, MaxBytes: maxBytes})
	big := func(i int) Line { return Line{Text: fmt.Sprintf("%04d%01020d", i, 0)} } // 1 KiB
	for i := range 100 {
		r.WriteLine(big(i))
	}
	got := r.Last(-1)
	if cost := costOf(got); cost > maxBytes {
		t.Errorf("ring holds %d bytes, bound %d", cost, maxBytes)
	}
	if len(got) < 8 || got[len(got)-1].Text[:4] != "0099" {
		t.Fatalf("ring holds %d lines ending %q, want the newest 8 or more", len(got), got[len(got)-1].Text[:4])
	}
	for i, l := range got {
		if want := fmt.Sprintf("%04d", 100-len(got)+i); l.Text[:4] != want {
			t.Fatalf("line %d is %s, want %s: not the newest lines in order", i, l.Text[:4], want)
		}
	}
	huge := Line{Text: string(make([]byte, 64<<10))}
	r.WriteLine(huge)
	if got := r.Last(-1); len(got) != 1 || len(got[0].Text) != 64<<10 {
		t.Fatalf("after a line over the bound the ring holds %d lines, want that line alone", len(got))
	}
	for i := range 200 {
		r.WriteLine(Line{Text: strconv.Itoa(i)})
	}
	if got := texts(r.Last(-1)); !slices.Equal(got, numbers(150, 199)) {
		t.Errorf("small lines after: ring holds %q, want 150…199", got)
	}
}

// A follower that does not read is ended once its queue would pass the
// ring's byte bound, not after FollowBuffer lines of any size.
func TestRingFollowerQueueBoundedByBytes(t *testing.T) {
	const maxBytes = 10 << 10
	r := NewRing(RingConfig{Program: "web", MaxBytes: maxBytes, FollowBuffer: 1000})
	lines, cancel := r.Follow(t.Context(), 0)
	defer cancel()
	for i := range 100 {
		r.WriteLine(Line{Text: fmt.Sprintf("%04d%01020d", i, 0)})
	}
	var got []Line
	for l := range lines {
		got = append(got, l)
	}
	if len(got) == 0 || got[len(got)-1].Stream != StreamLagged {
		t.Fatalf("follower got %d lines and no lag marker", len(got))
	}
	if n := len(got) - 1; n > 2*maxBytes/1024+1 {
		t.Errorf("follower was queued %d lines of 1 KiB, bound %d bytes", n, maxBytes)
	}
}

// Since tells one run's lines from the next: a mark taken at a run's end
// leaves out every line before it, whether the lines came one by one or
// in chunks not yet cut, and whatever the ring dropped meanwhile.
func TestRingSince(t *testing.T) {
	r := NewRing(RingConfig{Size: 4})
	r.WriteLine(Line{Text: "old"})
	_, mark := r.Since(0)
	if got, _ := r.Since(mark); len(got) != 0 {
		t.Fatalf("Since(end) = %q, want nothing", texts(got))
	}
	r.WriteChunk(&Chunk{Data: []byte("1\n2\n")})
	r.WriteLine(Line{Text: "3"})
	got, end := r.Since(mark)
	if !slices.Equal(texts(got), numbers(1, 3)) {
		t.Fatalf("Since(mark) = %q, want 1 2 3", texts(got))
	}
	r.WriteChunk(&Chunk{Data: []byte("4\n5\n6\n7\n8\n")})
	if got, _ := r.Since(end); !slices.Equal(texts(got), numbers(5, 8)) {
		t.Fatalf("after the ring wrapped, Since = %q, want the 4 it holds: 5…8", texts(got))
	}
	if got, _ := r.Since(mark); !slices.Equal(texts(got), numbers(5, 8)) {
		t.Fatalf("Since(older mark) = %q, want 5…8", texts(got))
	}
}
