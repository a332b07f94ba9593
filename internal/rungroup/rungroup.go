// Package rungroup runs a set of actors that live and end together: each
// is a function that runs until it is done or told to stop (execute) and
// the way to tell it (interrupt). The first actor to return ends the
// group: every actor is then interrupted, and Run returns once all of
// them have returned. It gives every long-lived goroutine of a command one
// owner and puts the order of a shutdown in one place.
package rungroup

import (
	"fmt"
	"runtime/debug"
)

// Group is a set of actors; the zero value is empty and ready. Add every
// actor before Run; a Group runs once.
type Group struct {
	actors []actor
}

type actor struct {
	execute   func() error
	interrupt func(error)
}

// Add adds an actor. execute runs in its own goroutine until it returns;
// interrupt must make it return soon, and may be called before execute
// has started or after it has returned (it is called exactly once, with
// the error of the actor that ended the group).
func (g *Group) Add(execute func() error, interrupt func(error)) {
	g.actors = append(g.actors, actor{execute, interrupt})
}

// PanicError is what a panicking actor returns to the others: Run
// interrupts them with it and, once they have all returned, panics again
// with it.
type PanicError struct {
	Value any
	Stack []byte // of the goroutine that panicked
}

func (p *PanicError) Error() string {
	return fmt.Sprintf("panic in an actor: %v\n\n%s", p.Value, p.Stack)
}

// Run starts every actor, waits for the first to return, interrupts them
// all with its error, waits for every one to return, and returns that
// first error. With no actors it returns nil at once. An actor's panic
// ends the group as a return does, and is raised again here (as a
// *PanicError) once the others have returned: they get to shut down,
// but a panic is never swallowed.
func (g *Group) Run() error {
	if len(g.actors) == 0 {
		return nil
	}
	errs := make(chan error, len(g.actors))
	for _, a := range g.actors {
		go func() { errs <- runActor(a.execute) }()
	}
	first := <-errs
	for _, a := range g.actors {
		a.interrupt(first)
	}
	var panicked *PanicError
	if p, ok := first.(*PanicError); ok {
		panicked = p
	}
	for range len(g.actors) - 1 {
		if p, ok := (<-errs).(*PanicError); ok && panicked == nil {
			panicked = p
		}
	}
	if panicked != nil {
		panic(panicked)
	}
	return first
}

// runActor runs execute, turning a panic into a *PanicError.
func runActor(execute func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return execute()
}
