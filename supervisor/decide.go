package supervisor

import "time"

// runView is what the next step of an instance meant to run depends on,
// copied out under the lock: decideRun reads nothing else.
type runView struct {
	running          bool          // a process of it is there
	restartRequested bool          // `supervisectl restart` asked for a new run
	unhealthy        bool          // its health (liveness, watchdog) ends this run
	settled          bool          // ended for good: Completed, or Failed
	shuttingDown     bool          // the supervisor is stopping everything
	unmetDep         string        // a dependency not yet as asked; "" when all are
	afterExit        bool          // the last run ended by itself (not asked to)
	backoffLeft      time.Duration // of its crash backoff, counted from that exit
	scheduled        bool          // a job: runs at the times of its schedule (schedule.go)
	slotDue          bool          // a job's time came, or start asked for a run
	overran          bool          // a job's run passed its max_runtime
}

// runStep is what reconcile does next for an instance meant to run.
type runStep int

const (
	stepNothing        runStep = iota // as it should be, or not ours to change now
	stepStopForRestart                // end the run (pre_stop, signal, grace, KILL), then start
	stepStopUnhealthy                 // end the run as a crash, for its health's reason
	stepWaitDependency                // Waiting, until the dependency is as asked
	stepBackOff                       // CrashLoopBackOff until backoffLeft has passed
	stepStart                         // start a new run now
)

var stepNames = [...]string{"nothing", "stop for restart", "stop unhealthy", "wait for dependency", "back off", "start"}

func (s runStep) String() string { return stepNames[s] }

// decideRun is the restart rule, as a function of what it looks at. The
// order matters: a process that runs is dealt with first (a restart asked
// for, then its health); with none, a program that ended for good stays so
// unless asked; then the supervisor's shutdown, the dependencies, and the
// crash backoff after an exit of its own (a restart asked for skips it, as
// in the kubelet).
func decideRun(v runView) runStep {
	switch {
	case v.running && v.restartRequested:
		return stepStopForRestart
	case v.running && v.unhealthy:
		return stepStopUnhealthy
	case v.running && v.overran:
		return stepStopUnhealthy
	case v.running:
		return stepNothing
	case v.settled && !v.restartRequested:
		return stepNothing
	case v.shuttingDown:
		return stepNothing
	case v.scheduled && !v.slotDue && !v.afterExit && !v.restartRequested:
		return stepNothing // a job between its times
	case v.unmetDep != "":
		return stepWaitDependency
	case v.afterExit && !v.restartRequested && v.backoffLeft > 0:
		return stepBackOff
	}
	return stepStart
}
