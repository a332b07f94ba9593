// Package notify implements the readiness protocols a program can use
// instead of (or besides) probes, and supervise's own report to systemd.
//
//   - sd_notify (notify = "sd_notify"): ListenSocket binds a unixgram
//     socket, the program gets its path as NOTIFY_SOCKET (Env) and sends
//     READY=1, STATUS=…, WATCHDOG=1, WATCHDOG_USEC=…, STOPPING=1,
//     MAINPID=…; each datagram arrives on Messages as a Message carrying
//     the sender's kernel-checked pid/uid/gid (SO_PASSCRED). Descriptors
//     sent along are closed at once, which releases sd_notify_barrier(3)
//     (systemd-notify --ready waits on one).
//   - Watchdog: with watchdog = "30s", a WATCHDOG=1 must come within every
//     30s; NewWatchdog arms one timer on the injected clock, Kick re-arms
//     it, and its callback fires once when it runs out (the supervisor then
//     restarts the program).
//   - fd (notify = "fd", s6's notification-fd): NewFD returns a pipe whose
//     write end the program gets at notify_fd; a newline on it means ready.
//   - ready_log_line: LineMatcher matches the program's output lines.
//   - NotifySystemd: supervise itself under systemd Type=notify sends
//     READY=1 (and STATUS=, STOPPING=1) to $NOTIFY_SOCKET, a path or an
//     @abstract name; a no-op when it is unset.
//   - Hand-over to another supervise binary (an upgrade in place):
//     Socket.Detach and FD.Detach stop reading at a message boundary and
//     give the descriptor to pass, so what the program sends meanwhile
//     waits in the kernel; AdoptSocket (checked: our private socket,
//     bound to the path named) and AdoptFD take them on the other side;
//     Watchdog.State and RestoreWatchdog carry the deadline across.
//
// Nothing here decides what readiness means for a program or restarts
// anything: the supervisor wires these to its state. Every goroutine here
// belongs to a value whose Close or Stop ends it.
package notify
