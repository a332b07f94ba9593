package proc

import (
	"testing"
	"testing/synctest"
)

func TestEventQueueKeepsEverythingInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newEventQueue()
		const n = 10000
		for i := range n { // nobody reads yet: push must not block
			q.push(ExitEvent{ExitCode: i})
		}
		for i := range n {
			if ev := <-q.out; ev.ExitCode != i {
				t.Fatalf("event %d: got %d", i, ev.ExitCode)
			}
		}
		q.close()
		if _, ok := <-q.out; ok {
			t.Error("channel not closed")
		}
	})
}
