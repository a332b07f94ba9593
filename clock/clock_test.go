package clock

import (
	"testing"
	"time"
)

func TestRealTimer(t *testing.T) {
	var c Clock = Real{}
	start := c.Now()
	tm := c.NewTimer(time.Millisecond)
	select {
	case <-tm.C():
	case <-time.After(10 * time.Second):
		t.Fatal("real timer never fired")
	}
	if c.Since(start) < time.Millisecond {
		t.Fatal("real timer fired early")
	}
}
