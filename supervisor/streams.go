package supervisor

import (
	"context"
	"errors"
	"sync"
)

// streamSet owns the goroutines that feed `logs` and `events` streams: each
// ends with its caller's context or when the set closes, and Run waits for
// them all before it returns.
type streamSet struct {
	ctx    context.Context // ends every stream when the set closes
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup // Add only under mu while !closed
}

func newStreamSet() *streamSet {
	ctx, cancel := context.WithCancel(context.Background())
	return &streamSet{ctx: ctx, cancel: cancel}
}

var errShuttingDown = errors.New("supervise is shutting down")

// begin registers a stream for a caller whose context is ctx. The stream's
// goroutines use the returned context, and call done once, when the last
// of them ends.
func (ss *streamSet) begin(ctx context.Context) (context.Context, func(), error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.closed {
		return nil, nil, errShuttingDown
	}
	ss.wg.Add(1)
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(ss.ctx, cancel)
	return ctx, func() { stop(); cancel(); ss.wg.Done() }, nil
}

// close ends every stream and waits for their goroutines.
func (ss *streamSet) close() {
	ss.mu.Lock()
	ss.closed = true
	ss.mu.Unlock()
	ss.cancel()
	ss.wg.Wait()
}
