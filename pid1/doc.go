// Package pid1 is `supervise exec`: a container init in the line of tini
// and dumb-init that runs one command, forwards signals to it, reaps every
// zombie and exits like the command did.
//
// The contract of Run:
//
//   - The command runs in its own process group. When stdin is our
//     controlling terminal, the command takes it over: as a session
//     leader (PID 1 of `docker run -it`) we give the terminal up and the
//     command's new session acquires it; otherwise (run from a shell) the
//     command's group is put in the foreground. So an interactive shell
//     under the init has job control and Ctrl-C goes to the foreground
//     job, never through the init. When we have a controlling terminal
//     the command does not get (stdin redirected, a background job), it
//     gets a new session without one, cut off from the terminal. With no
//     controlling terminal at all (a container without -t, a service) it
//     stays in our session, as under tini: a new session would cut it off
//     from nothing and costs every start (the kernel makes a scheduling
//     autogroup for it).
//   - Every catchable signal sent to the init is forwarded to the
//     command's process group (Config.SingleChild: to the command alone),
//     after Config.Rewrite, as tini and dumb-init do. The signals come
//     through a tap of our own in place of the Go runtime's handler (one
//     rt_sigaction per signal; os/signal would take a thread round trip per
//     signal, more than the rest of the init's start): it reads each
//     siginfo, so SIGPIPE, SIGURG and SIGPROF are forwarded too, only
//     those another process sent, never the scheduler's preemption SIGURGs
//     nor the kernel's SIGPIPE for our own writes; and faults we cause
//     stay the runtime's panics (sigtap_linux.go; amd64 only, elsewhere
//     os/signal takes the signals and those three are not forwarded).
//     While the command runs, that handler forwards what the init only
//     passes on with a kill(2) of its own, before any Go code runs.
//     Not forwarded: SIGCHLD (ours), SIGTTIN and SIGTTOU
//     (the kernel's job control of our own terminal use), and the C
//     library's 32 and 33. All of them are handled, so the init never
//     stops (SIGTSTP is forwarded, not obeyed) and never dies of one.
//   - One goroutine owns every wait4 of the process: it reaps the command
//     and every orphan re-parented to us (we are PID 1, else we become a
//     child subreaper), so the command's status is never stolen and no
//     zombie stays. Nothing else in the process may wait for children.
//   - When the command exits, whatever it left behind (its process group
//     and every other descendant) gets Config.StopSignal, then SIGKILL
//     once Config.Grace has passed; the init returns the moment the last
//     descendant is gone (the last SIGCHLD), never sleeping out the grace.
//     With Config.SingleChild the rest is left alone, as dumb-init's
//     --single-child does: the init returns at once (as PID 1, the kernel
//     ends what is left with the pid namespace).
//   - Run returns the command's exit code, or 128+N when a signal N killed
//     it (also when not PID 1: re-raising would not kill a PID 1), with
//     Config.SuccessExitCodes mapped to 0. A command that is not found
//     returns 127, one that cannot be executed 126, each with a *StartError
//     whose message is one line.
//   - Config.Restart restarts the command with the kubelet's crash backoff
//     (backoff.Crash); a SIGTERM, SIGINT or SIGQUIT received (or ctx
//     cancelled) means stop: no restart follows.
//   - Config.Dedicated is for a process that exits when Run returns
//     (supervise exec): Run then leaves its signal handlers and the
//     subreaper flag in place.
//   - Config.Sandbox runs the command in a proc sandbox (cgroup limits,
//     namespaces). The runtime then owns every wait4, so the command is
//     started through Sandbox.InitArgs: this binary again, as a plain
//     `exec` init inside the sandbox, which does the reaping and the
//     grace-bounded cleanup there.
package pid1
