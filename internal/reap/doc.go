// Package reap collects the exit statuses of a process's children: the one
// wait4 loop that both the supervisor's reaper and the exec init use. It
// is Linux only; elsewhere the package is empty.
package reap
