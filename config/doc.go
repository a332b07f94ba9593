// Package config turns a supervise.toml (BurntSushi/toml) or a Procfile
// into plain, typed, validated structs. It knows nothing of processes:
// nothing here starts, resolves or watches anything.
//
// The contract:
//
//   - Load and Parse either return a Config in which every value is typed,
//     defaulted and checked, or an ErrorList with every problem in the file
//     at once (never only the first), in line order, each printing as
//     "file:line: key: message". Nothing partial is returned.
//   - Unknown keys are errors (with a "did you mean" when one is close), as
//     are values of the wrong type, bad durations (Go syntax: "10s"), bad
//     sizes ("256MiB", "1G", "512k" or plain bytes), bad signals, empty
//     commands, invalid names, unknown depends_on or exit_on targets and
//     dependency cycles (named: "a -> b -> a").
//   - Lines come from our own scan of the text: BurntSushi/toml v1.6 keeps
//     key positions unexported. A syntax error names the line toml reports.
//   - [defaults] holds any program key and applies under every program:
//     program values replace scalars and arrays, tables merge key by key (a
//     hook's command and http are one choice: a program that sets either
//     drops both from defaults; stderr = "stdout" and a stderr table replace
//     each other). An error in a default names defaults.KEY, once.
//   - A string command is split like a shell (SplitCommand) but no shell
//     runs; an unquoted operator or $ is an error that suggests
//     ["sh", "-c", "…"]. An array command is taken as is.
//   - env values expand ${VAR}, ${VAR:-default} and docker compose's other
//     forms, nested (expand.go), from the supervisor's environment at load
//     time; $$ is a literal $, and any other $ stays as written. env_file
//     entries are .env files (LoadEnvFile), read once per load. A value
//     expands to at most 128 KiB, a program's environment to at most
//     1 MiB, all of them together to 16 MiB (bounds.go). A reload re-reads
//     env files.
//   - Relative paths (dir, env_file, stdout/stderr file, socket) resolve
//     against the config file's directory; dir defaults to it.
//   - Programs keep file order. instances > 1 is only validated here; the
//     supervisor expands it to keys "name:0" … "name:N-1".
//   - Procfile (ParseProcfile): dev defaults — /bin/sh -c per line, restart
//     never, PORT per process type (5000, +100, +1 per instance) and, unless
//     told otherwise, the whole set ends when one process ends.
//     LoadWithOptions takes the dev runner's options (ParseFormation reads
//     `-m web=2,worker=1`); a TOML file refuses them.
//   - [program.NAME.watch] is only described here (package watch acts on
//     it): paths resolve against the file's directory and default to the
//     program's dir, include/exclude globs are checked with the matcher
//     the watcher uses (watch/glob), debounce defaults to 200ms (0 is
//     allowed), signal replaces the restart. A change of watch alone never
//     needs a new process. watch_config (default true) says whether the
//     supervisor reloads when the config file changes.
//   - Parse never panics on any input (FuzzParse), and reads no file but
//     env_file ones, each at most 1 MiB and regular. Key parts, keys,
//     tables, programs and [defaults] times programs are bounded before
//     decoding (bounds.go), so any file of 1 MiB is refused or loaded in
//     well under 100 MiB (shapes_test.go).
//   - Health (health.go): probes get the kubelet's defaults (period 10s,
//     timeout 1s, success 1, failure 3, no initial delay) and are one of
//     command, http, tcp (a program's choice drops the others from
//     [defaults]); startup and liveness success thresholds must be 1. A
//     program has at most one readiness source: probes.readiness, notify
//     or ready_log_line (a checked Go regexp). notify_fd needs notify =
//     "fd" (default 3, or the first descriptor after the listen sockets),
//     watchdog needs notify = "sd_notify". depends_on is
//     an array (each waits for "ready") or a table of conditions, "ready",
//     "running" or "completed" — the last refused on a dependency with
//     restart = "always", which never completes. http and tcp probes are
//     refused with the "net" namespace (they could not reach the program). Notify, notify_fd and
//     watchdog change what the process is given (NeedsNewProcess); probes
//     and ready_log_line do not.
//   - Listen (listen.go): URLs parsed by internal/sockets; a unix
//     socket's directory must be writable by its owner only, a port below
//     ip_unprivileged_port_start needs root or CAP_NET_BIND_SERVICE, and
//     an address is listed once in the whole file. The sockets take
//     descriptors 3…, so a notify_fd among them is refused.
//
// Keys: config.example.toml shows every one, commented. Each table's keys
// are listed once, in the rows that decode them (supervisorKeys and
// programKeys in keys.go; each nested table's rows beside its decoder, in
// the file named after it); the unknown-key check reads those rows, Keys
// returns every key's dotted path from them, and a test fails when the
// example leaves a key out. Adding a key is a field of the struct (tagged
// reload:"new-process" when a change needs a new process) and its
// decoding row, then its line in the example; the export package's tests
// then ask each exporter to map it or warn about it.
package config
