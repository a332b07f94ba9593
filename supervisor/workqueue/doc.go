// Package workqueue is the supervisor's queue of restart intents: client-go's
// rate-limited work queue semantics, generic over the key, on an injected
// clock. It knows nothing of programs; keys are plain comparable values.
//
//   - Add deduplicates: a key waiting in the queue is there once. A key added
//     while a worker holds it is marked and queued again when that worker
//     calls Done, so no key is ever held by two workers at once.
//   - Get blocks until a key is ready or the queue is shutting down; the
//     caller must call Done with the key when it is finished with it.
//   - AddAfter keeps delayed keys in a min-heap on ready time, served by one
//     waiting-loop goroutine; re-adding a waiting key keeps the earlier ready
//     time. Keys ready at the same instant leave the heap in the same order
//     as client-go's (a binary heap on ready time alone), not in FIFO order.
//   - AddRateLimited(key) is AddAfter(key, limiter.When(key)); Forget and
//     NumRequeues go to the limiter.
//   - ShutDown stops intake (Add, AddAfter are then ignored), drops delayed
//     keys, and stops the waiting loop; Get keeps handing out keys already
//     queued and then reports shutdown. ShutDownWithDrain also waits until
//     every queued key has been handed out and every held key is Done.
//   - Stats returns the counters a status page shows.
//
// Every method is safe for concurrent use. ShutDown must be called once the
// queue is no longer needed: it owns and stops the waiting loop.
package workqueue
