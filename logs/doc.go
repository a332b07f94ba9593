// Package logs carries a program's output, line by line, from the pipe the
// supervisor gives the program to the places it should go: the supervisor's
// console, rotating per-program files and an in-memory ring that
// `supervisectl logs [-f]` reads. It knows nothing of processes or config.
//
//   - A [Pump] owns one goroutine that reads one pipe to EOF and splits it
//     into [Line]s. A line longer than the maximum length is cut into chunks
//     marked Partial; a last line without a newline is still emitted (Partial).
//     Lines are delivered whole, in order, to one [Sink].
//   - Sinks never drop lines: a sink that is slow blocks the pump, and so the
//     pipe, and so the program writing to it. The one exception is a ring
//     follower (a client of `logs -f`): it has a bounded buffer of its own and
//     is ended with a lag marker instead of ever blocking a pump.
//   - [Console] writes "name | text" lines atomically under one mutex, with a
//     colour per program on a terminal. [File] appends lines to a file and
//     rotates it by size, never in the middle of a line. [Ring] keeps the last
//     lines of a program across its restarts. [Multi] fans one line out.
//   - Sinks that buffer implement [Flusher]; a pump flushes its sink each time
//     it finds the pipe empty, just before it waits for more, so a line never
//     waits in a buffer while the program is quiet, and nothing is left
//     unwritten when the pump ends.
//   - [Program] is the helper the supervisor keeps per program: it makes the
//     pipes for each process run, pumps them into the program's sinks and
//     waits for the pumps on Close.
package logs
