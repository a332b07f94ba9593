package supervisor

import "time"

// runView is what the next step of an instance meant to run depends on,
// copied out under the lock: decideRun reads nothing else.
type runView struct {
	running          bool // a process of it is there
	restartRequested bool // `supervisectl restart` (or a reload) asked for a new run
	// startAsked: a command (start, restart, a reload, a dependency back)
	// lifts an end for good; waiveBackoff: it skips the crash backoff too.
	startAsked   bool
	waiveBackoff bool
	unhealthy    bool   // its health (liveness, watchdog, post_start) ends this run
	settled      bool   // ended for good: Completed, or Failed
	shuttingDown bool   // the supervisor is stopping everything
	unmetDep     string // a dependency not yet as asked; "" when all are
	afterExit    bool   // the last run ended by itself (not asked to)
	// backingOff: waiting out the crash backoff (CrashLoopBackOff), its
	// exit decided already; a shutdown then stops it, as a stop would.
	backingOff    bool
	policyRestart bool          // its restart rules and policy restart that exit
	backoffLeft   time.Duration // of its crash backoff, counted from that exit
	scheduled     bool          // a job: runs at the times of its schedule (schedule.go)
	slotDue       bool          // a job's time came, or start asked for a run
}

// runDecision is decideRun's answer: the step, and whether it uses up
// what commands asked (take): the worker then clears restartRequested,
// startAsked and waiveBackoff, lifts an end for good that a restart or a
// start asked to lift, and forgets the exit whose backoff was waived.
type runDecision struct {
	step runStep
	take bool
}

// runStep is what reconcile does next for an instance meant to run.
type runStep int

const (
	stepNothing        runStep = iota // as it should be, or not ours to change now
	stepStopForRestart                // end the run (pre_stop, signal, grace, KILL), then start
	stepStopUnhealthy                 // end the run as a crash, for its health's reason
	stepWaitDependency                // Waiting, until the dependency is as asked
	stepSettle                        // ended for good: Completed or Failed
	stepBackOff                       // CrashLoopBackOff until backoffLeft has passed
	stepStart                         // start a new run now
)

var stepNames = [...]string{"nothing", "stop for restart", "stop unhealthy", "wait for dependency", "settle", "back off", "start"}

func (s runStep) String() string { return stepNames[s] }

// decideRun is the restart rule, as a function of what it looks at: whether
// a run ends, whether an exit restarts and when. The order matters: a
// process that runs is dealt with first (a restart asked for, then its
// health); with none, an exit of its own that its restart policy (or the
// shutdown) does not restart ends it for good, and a program that ended
// for good stays so unless asked; then the supervisor's shutdown, a job
// between its times (a run it retries is not), the dependencies, and the
// crash backoff after an exit of its own (a restart asked for skips it, as
// in the kubelet). With no process, what commands
// asked is used up by the decision, whatever it is.
func decideRun(v runView) runDecision {
	if v.running {
		return runDecision{step: decideRunning(v)}
	}
	return decideStopped(v)
}

// decideRunning: whether a run that is there ends, and why.
func decideRunning(v runView) runStep {
	switch {
	case v.restartRequested:
		return stepStopForRestart
	case v.unhealthy:
		return stepStopUnhealthy
	}
	return stepNothing
}

// decideStopped: whether and when an instance with no process starts.
func decideStopped(v runView) runDecision {
	d := runDecision{take: v.restartRequested || v.startAsked || v.waiveBackoff}
	lifted := v.restartRequested || v.startAsked
	own := v.afterExit && !v.waiveBackoff
	switch {
	case own && !lifted && (!v.policyRestart || v.shuttingDown && !v.backingOff):
		d.step = stepSettle
	case v.settled && !lifted:
		d.step = stepNothing
	case v.shuttingDown:
		d.step = stepNothing
	case v.scheduled && !v.slotDue && !v.afterExit && !v.restartRequested:
		d.step = stepNothing // a job between its times
	case v.unmetDep != "":
		d.step = stepWaitDependency
	case own && !v.restartRequested && v.backoffLeft > 0:
		d.step = stepBackOff
	default:
		d.step = stepStart
	}
	return d
}
