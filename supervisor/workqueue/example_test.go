package workqueue_test

import (
	"context"
	"fmt"
	"time"

	"github.com/supervise-dev/supervise/clock/fakeclock"
	"github.com/supervise-dev/supervise/supervisor/workqueue"
)

func Example() {
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	q := workqueue.New(workqueue.Config[string]{Name: "restarts", Clock: clock})
	defer q.ShutDown()

	q.Add("web")
	q.Add("web") // already queued: not queued twice
	q.AddAfter("db", time.Minute)
	fmt.Println("ready:", q.Len())

	key, _ := q.Get()
	q.Add("web") // held: queued again by Done
	q.Done(key)
	key, _ = q.Get()
	fmt.Println("got", key, "again")
	q.Done(key)

	// The waiting loop's timer for db is set: moving the clock now fires it.
	_ = clock.WaitForWaiterAt(context.Background(), time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC))
	clock.Step(time.Minute)
	key, _ = q.Get() // blocks until the waiting loop moves db over
	fmt.Println("got", key, "after a minute")
	q.Done(key)
	// Output:
	// ready: 1
	// got web again
	// got db after a minute
}
