package main

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"sync"
	"testing"
)

// blockingWriter holds every write until released, like a stderr pipe
// nobody reads.
type blockingWriter struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	release chan struct{}
	writes  int
}

func (b *blockingWriter) Write(p []byte) (int, error) {
	<-b.release
	b.mu.Lock()
	defer b.mu.Unlock()
	b.writes++
	return b.buf.Write(p)
}

// Every record arrives, whole and in order, from several writers, while
// the reader is stalled; a full queue holds the writers back instead of
// dropping; Close writes what is left.
func TestQueuedWriterKeepsEverythingInOrder(t *testing.T) {
	bw := &blockingWriter{release: make(chan struct{})}
	q := newQueuedWriter(bw, 256)
	var wg sync.WaitGroup
	const writers, per = 4, 500
	for w := range writers {
		wg.Go(func() {
			for i := range per {
				fmt.Fprintf(q, "w%d %04d\n", w, i)
			}
		})
	}
	// The stalled reader leaves room for ~256 bytes: the writers wait
	// until it goes on, and then it gets what gathered in one write.
	for {
		q.mu.Lock()
		full := len(q.queue) >= q.max
		q.mu.Unlock()
		if full {
			break
		}
		runtime.Gosched()
	}
	close(bw.release)
	wg.Wait()
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	next := make([]int, writers)
	lines := bytes.Split(bytes.TrimSuffix(bw.buf.Bytes(), []byte("\n")), []byte("\n"))
	if len(lines) != writers*per {
		t.Fatalf("%d lines, want %d", len(lines), writers*per)
	}
	for _, l := range lines {
		var w, i int
		if _, err := fmt.Sscanf(string(l), "w%d %04d", &w, &i); err != nil || i != next[w] {
			t.Fatalf("line %q out of order or torn (want w%d %04d)", l, w, next[w])
		}
		next[w]++
	}
	if bw.writes >= writers*per {
		t.Errorf("%d writes for %d records: nothing was batched", bw.writes, writers*per)
	}
	// After Close, writes go straight through.
	if _, err := io.WriteString(q, "late\n"); err != nil || !bytes.HasSuffix(bw.buf.Bytes(), []byte("late\n")) {
		t.Fatalf("write after close: %v", err)
	}
}

// Flush returns only once everything queued before it has been written,
// the batch being written included: the exec of an upgrade comes next.
func TestQueuedWriterFlushWritesTheQueue(t *testing.T) {
	bw := &blockingWriter{release: make(chan struct{})}
	q := newQueuedWriter(bw, 1<<20)
	defer q.Close()
	for i := range 100 {
		fmt.Fprintf(q, "line %d\n", i)
	}
	flushed := make(chan struct{})
	go func() {
		q.Flush()
		close(flushed)
	}()
	select {
	case <-flushed:
		t.Fatal("Flush returned while the writer held every write")
	default:
	}
	close(bw.release)
	<-flushed
	bw.mu.Lock()
	defer bw.mu.Unlock()
	if got := bytes.Count(bw.buf.Bytes(), []byte("\n")); got != 100 {
		t.Errorf("%d lines written when Flush returned, want 100", got)
	}
}
