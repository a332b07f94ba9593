package logs_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"

	"github.com/supervise-dev/supervise/logs"
)

// A supervisor keeps one Program per program: each process run gets fresh
// pipes, and the ring outlives the runs.
func ExampleProgram() {
	console := logs.NewConsole(os.Stdout, logs.ConsoleConfig{Names: []string{"web", "db"}})
	ring := logs.NewRing(logs.RingConfig{Program: "web"})
	prog, err := logs.NewProgram(logs.ProgramConfig{
		Name:    "web",
		Console: console,
		Ring:    ring,
		Stdout:  logs.Output{Console: true},
		Stderr:  logs.Output{Console: true},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for run := range 2 {
		stdout, err := prog.NewPipe(logs.Stdout)
		if err != nil {
			fmt.Println(err)
			return
		}
		cmd := exec.Command("/bin/sh", "-c", `echo "run $0"; printf 'no newline'`, fmt.Sprint(run))
		cmd.Stdout = stdout
		err = cmd.Start()
		stdout.Close() // the child has its copy now
		if err != nil {
			fmt.Println(err)
			return
		}
		cmd.Wait()
		prog.Wait(context.Background()) // this run's lines before the next run's
	}
	prog.Close(context.Background()) // waits until the pipes are drained
	for _, l := range ring.Last(2) {
		fmt.Printf("ring: %q partial=%v\n", l.Text, l.Partial)
	}
	// Output:
	// web | run 0
	// web | no newline
	// web | run 1
	// web | no newline
	// ring: "run 1" partial=false
	// ring: "no newline" partial=true
}
