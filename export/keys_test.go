package export

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/supervise-dev/supervise/config"
)

// A keyCase sets one key away from its default: base is the program's
// lines without it (what the key needs to be valid: notify_fd needs
// notify = "fd"), set the lines with it. For supervisor.* the lines go in
// [supervisor], for procfile.* in [procfile].
type keyCase struct {
	base, set string
}

// noOtherValue are keys that take one valid value only, their default, so
// nothing can set them away from it.
var noOtherValue = map[string]string{
	"program.*.probes.startup.success_threshold":          "must be 1 for a startup probe",
	"program.*.probes.liveness.success_threshold":         "must be 1 for a liveness probe",
	"program.*.probes.readiness.termination_grace_period": "a readiness probe has none",
	"program.*.restart_rules.*.action":                    `"restart" is the only action`,
}

// keyCases are a case for every key of config.Keys(); a key without one
// fails TestExportersMapOrWarnEveryKey, naming it.
func keyCases() map[string]keyCase {
	only := func(set string) keyCase { return keyCase{set: set} }
	with := func(base, set string) keyCase { return keyCase{base: base, set: base + set} }
	const rule = "restart_rules = [{ exit_codes = { operator = \"In\", values = [3] } }]\n"
	cs := map[string]keyCase{
		"supervisor.socket":           only("socket = \"/run/other.sock\"\n"),
		"supervisor.socket_group":     only("socket_group = \"0\"\n"),
		"supervisor.workers":          only("workers = 7\n"),
		"supervisor.shutdown_timeout": only("shutdown_timeout = \"77s\"\n"),
		"supervisor.log_format":       only("log_format = \"json\"\n"),
		"supervisor.log_level":        only("log_level = \"debug\"\n"),
		"supervisor.exit_on":          only("exit_on = [\"p\"]\n"),
		"supervisor.watch_config":     only("watch_config = false\n"),
		"supervisor.probe_jitter":     only("probe_jitter = false\n"),
		"supervisor.strict_shutdown":  only("strict_shutdown = true\n"),
		"supervisor.log_ring":         only("log_ring = \"8MiB\"\n"),
		"supervisor.max_connections":  only("max_connections = 100\n"),
		"supervisor.max_followers":    only("max_followers = 7\n"),
		"supervisor.http":             only("http = \"127.0.0.1:9100\"\n"),
		"supervisor.http_token_file":  only("http_token_file = \"token\"\n"),

		"procfile.file":         {base: "file = \"Procfile\"\n", set: "file = \"Other.procfile\"\n"},
		"procfile.port":         only("port = 7000\n"),
		"procfile.formation":    only("formation = { web = 2 }\n"),
		"procfile.restart":      only("restart = \"always\"\n"),
		"procfile.keep_running": only("keep_running = true\n"),
		"procfile.env_files":    only("env_files = [\"e.env\"]\n"),
		"procfile.watch":        only("watch = true\n"),
		"procfile.watch_paths":  with("watch = true\n", "watch_paths = [\"/srv\"]\n"),
		"procfile.watch_ignore": with("watch = true\n", "watch_ignore = [\"*.tmp\"]\n"),
		"procfile.can_die":      only("can_die = [\"web\"]\n"),
		"procfile.auto_restart": only("auto_restart = [\"web\"]\n"),
		"procfile.hold_ports":   only("hold_ports = true\n"),

		"program.*.command":                             only("command = \"/bin/other --flag\"\n"),
		"program.*.dir":                                 only("dir = \"/srv\"\n"),
		"program.*.env_file":                            only("env_file = \"e.env\"\n"),
		"program.*.env":                                 only("env = { A = \"1\" }\n"),
		"program.*.exit_tail_lines":                     only("exit_tail_lines = 7\n"),
		"program.*.user":                                only("user = \"7\"\n"),
		"program.*.group":                               only("group = \"7\"\n"),
		"program.*.groups":                              only("groups = [\"7\"]\n"),
		"program.*.restart":                             only("restart = \"never\"\n"),
		"program.*.success_exit_codes":                  only("success_exit_codes = [0, 3]\n"),
		"program.*.restart_rules":                       only(rule),
		"program.*.restart_rules.*.exit_codes":          only(rule),
		"program.*.restart_rules.*.exit_codes.operator": with("", "restart_rules = [{ exit_codes = { operator = \"NotIn\", values = [3] } }]\n"),
		"program.*.restart_rules.*.exit_codes.values":   with("", "restart_rules = [{ exit_codes = { operator = \"In\", values = [4] } }]\n"),
		"program.*.instances":                           only("instances = 3\n"),
		"program.*.autostart":                           only("autostart = false\n"),
		"program.*.critical":                            only("critical = true\n"),
		"program.*.sidecar":                             only("sidecar = true\n"),
		"program.*.depends_on":                          only("depends_on = [\"db\"]\n"),
		"program.*.depends_on.*.condition":              with("", "depends_on.db.condition = \"running\"\n"),
		"program.*.depends_on.*.restart_with":           with("", "depends_on.db.restart_with = true\n"),
		"program.*.stop_signal":                         only("stop_signal = \"QUIT\"\n"),
		"program.*.stop_timeout":                        only("stop_timeout = \"77s\"\n"),
		"program.*.min_stop_grace":                      only("min_stop_grace = \"7s\"\n"),
		"program.*.backoff":                             only("backoff.initial = \"3s\"\n"),
		"program.*.backoff.initial":                     only("backoff.initial = \"3s\"\n"),
		"program.*.backoff.max":                         only("backoff.max = \"7m\"\n"),
		"program.*.backoff.reset_after":                 only("backoff.reset_after = \"7m\"\n"),
		"program.*.sandbox":                             only("sandbox.no_new_privileges = true\n"),
		"program.*.sandbox.namespaces":                  only("sandbox.namespaces = [\"ipc\"]\n"),
		"program.*.sandbox.hostname":                    with("sandbox.namespaces = [\"uts\"]\n", "sandbox.hostname = \"h\"\n"),
		"program.*.sandbox.memory_max":                  only("sandbox.memory_max = \"64MiB\"\n"),
		"program.*.sandbox.cpu_max":                     only("sandbox.cpu_max = 0.5\n"),
		"program.*.sandbox.pids_max":                    only("sandbox.pids_max = 64\n"),
		"program.*.sandbox.no_new_privileges":           only("sandbox.no_new_privileges = true\n"),
		"program.*.sandbox.umask":                       only("sandbox.umask = \"0027\"\n"),
		"program.*.sandbox.rlimits":                     only("sandbox.rlimits.nofile = 100\n"),
		"program.*.sandbox.rlimits.*.soft":              with("sandbox.rlimits.nofile = 100\n", "sandbox.rlimits.core = { soft = 0, hard = 100 }\n"),
		"program.*.sandbox.rlimits.*.hard":              with("sandbox.rlimits.nofile = 100\n", "sandbox.rlimits.core = { soft = 100, hard = 200 }\n"),
		"program.*.hooks":                               only("hooks.pre_start.command = \"/bin/hook\"\n"),
		"program.*.watch":                               only("watch.paths = [\"/srv\"]\n"),
		"program.*.watch.paths":                         only("watch.paths = [\"/srv\"]\n"),
		"program.*.watch.include":                       with("watch.paths = [\"/srv\"]\n", "watch.include = [\"*.go\"]\n"),
		"program.*.watch.exclude":                       with("watch.paths = [\"/srv\"]\n", "watch.exclude = [\"*.tmp\"]\n"),
		"program.*.watch.gitignore":                     with("watch.paths = [\"/srv\"]\n", "watch.gitignore = true\n"),
		"program.*.watch.debounce":                      with("watch.paths = [\"/srv\"]\n", "watch.debounce = \"7s\"\n"),
		"program.*.watch.signal":                        with("watch.paths = [\"/srv\"]\n", "watch.signal = \"HUP\"\n"),
		"program.*.rollout":                             only("rollout.max_unavailable = 2\n"),
		"program.*.rollout.max_unavailable":             only("rollout.max_unavailable = 2\n"),
		"program.*.rollout.timeout":                     only("rollout.timeout = \"7m\"\n"),
		"program.*.probes":                              only("probes.readiness.tcp = 8080\n"),
		"program.*.notify":                              only("notify = \"sd_notify\"\n"),
		"program.*.notify_fd":                           with("notify = \"fd\"\n", "notify_fd = 5\n"),
		"program.*.watchdog":                            with("notify = \"sd_notify\"\n", "watchdog = \"10s\"\n"),
		"program.*.ready_log_line":                      only("ready_log_line = \"up\"\n"),
		"program.*.listen":                              only("listen = [\"tcp://127.0.0.1:18080\"]\n"),
	}
	const sched = "schedule = \"0 3 * * *\"\n"
	cs["program.*.schedule"] = only(sched)
	cs["program.*.timezone"] = with(sched, "timezone = \"Europe/Berlin\"\n")
	cs["program.*.concurrency"] = with(sched, "concurrency = \"replace\"\n")
	cs["program.*.starting_deadline"] = with(sched, "starting_deadline = \"7m\"\n")
	cs["program.*.max_runtime"] = with(sched, "max_runtime = \"7m\"\n")
	cs["program.*.jitter"] = with(sched, "jitter = \"7m\"\n")
	for _, out := range []string{"stdout", "stderr"} {
		const file = ".file = \"/var/log/p.log\"\n"
		cs["program.*."+out] = only(out + file)
		cs["program.*."+out+".file"] = only(out + file)
		cs["program.*."+out+".console"] = only(out + ".console = false\n")
		cs["program.*."+out+".max_size"] = with(out+file, out+".max_size = \"1MiB\"\n")
		cs["program.*."+out+".max_files"] = with(out+file, out+".max_files = 7\n")
		cs["program.*."+out+".timestamps"] = only(out + ".timestamps = true\n")
	}
	for _, h := range []string{"pre_start", "post_start", "pre_stop", "post_stop"} {
		k, p := "program.*.hooks."+h, "hooks."+h
		url := p + ".http.url = \"http://127.0.0.1:9/h\"\n"
		cs[k] = only(p + ".command = \"/bin/hook\"\n")
		cs[k+".command"] = only(p + ".command = \"/bin/hook\"\n")
		cs[k+".http"] = only(p + ".http = \"http://127.0.0.1:9/h\"\n")
		cs[k+".sleep"] = only(p + ".sleep = \"3s\"\n")
		cs[k+".timeout"] = with(p+".command = \"/bin/hook\"\n", p+".timeout = \"7s\"\n")
		cs[k+".http.url"] = only(url)
		cs[k+".http.method"] = with(url, p+".http.method = \"POST\"\n")
		cs[k+".http.headers"] = with(url, p+".http.headers = { X-Token = \"t\" }\n")
		cs[k+".http.expect_status"] = with(url, p+".http.expect_status = 204\n")
	}
	for _, kind := range []string{"startup", "readiness", "liveness"} {
		k, p := "program.*.probes."+kind, "probes."+kind
		tcp := p + ".tcp = 8080\n"
		url := p + ".http.url = \"http://127.0.0.1:8080/h\"\n"
		cs[k] = only(tcp)
		cs[k+".command"] = only(p + ".command = \"/bin/check\"\n")
		cs[k+".http"] = only(p + ".http = \"http://127.0.0.1:8080/h\"\n")
		cs[k+".tcp"] = only(tcp)
		cs[k+".initial_delay"] = with(tcp, p+".initial_delay = \"7s\"\n")
		cs[k+".period"] = with(tcp, p+".period = \"7s\"\n")
		cs[k+".timeout"] = with(tcp, p+".timeout = \"3s\"\n")
		cs[k+".success_threshold"] = with(tcp, p+".success_threshold = 2\n")
		cs[k+".failure_threshold"] = with(tcp, p+".failure_threshold = 7\n")
		cs[k+".termination_grace_period"] = with(tcp, p+".termination_grace_period = \"7s\"\n")
		cs[k+".http.url"] = only(url)
		cs[k+".http.headers"] = with(url, p+".http.headers = { X-Token = \"t\" }\n")
		cs[k+".http.expect_status"] = with(url, p+".http.expect_status = 204\n")
	}
	for _, r := range keysUnder("program.*.sandbox.rlimits.") {
		cs["program.*.sandbox.rlimits."+r] = only("sandbox.rlimits." + r + " = 7\n")
	}
	for k := range noOtherValue {
		delete(cs, k)
	}
	return cs
}

// moreCases are further values of keys that take several, each set away
// from the default as keyCases' own: an exporter may map one value and
// have to warn of another. concurrency = "allow" is a CronJob's Allow, and
// a warning for systemd, which never runs a unit twice at once.
func moreCases() map[string][]keyCase {
	const sched = "schedule = \"0 3 * * *\"\n"
	const file = "stdout.file = \"/var/log/p.log\"\n"
	return map[string][]keyCase{
		"program.*.concurrency": {{base: sched, set: sched + "concurrency = \"allow\"\n"}},
		// stderr into stdout's pipe, to the console and to a file.
		"program.*.stderr": {{set: "stderr = \"stdout\"\n"}, {base: file, set: file + "stderr = \"stdout\"\n"}},
	}
}

// keysUnder are the names of the keys right under prefix, without "*".
func keysUnder(prefix string) []string {
	var out []string
	for _, k := range config.Keys() {
		if rest, ok := strings.CutPrefix(k, prefix); ok && !strings.Contains(rest, ".") && rest != "*" {
			out = append(out, rest)
		}
	}
	return out
}

// keyConfig is the config of one case's lines, written in dir: program p (with a
// dependency db that has a port), or a Procfile's programs.
func keyConfig(t *testing.T, dir, key, lines string) *config.Config {
	t.Helper()
	for name, data := range map[string]string{
		"e.env":          "FROM_FILE=1\n",
		"token":          "0123456789abcdef0123456789abcdef\n",
		"Procfile":       "web: /bin/web --port $PORT\nworker: /bin/worker\n",
		"Other.procfile": "web: /bin/other-web\nworker: /bin/other-worker\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var src string
	switch {
	case strings.HasPrefix(key, "procfile."):
		src = "[procfile]\n" + lines
	case strings.HasPrefix(key, "supervisor."):
		// After the programs, whose lines the output names.
		src = keyPrograms("") + "[supervisor]\n" + lines
	default:
		src = keyPrograms(lines)
	}
	path := filepath.Join(dir, "supervise.toml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatalf("%s: %v\n%s", key, err, src) // the case's lines are wrong
	}
	return cfg
}

func keyPrograms(lines string) string {
	p := "[program.p]\n"
	if !strings.HasPrefix(lines, "command =") {
		p += "command = \"/bin/app --flag\"\n"
	}
	return "[program.db]\ncommand = \"/bin/db\"\nprobes.readiness.tcp = 5432\n" + p + lines
}

// An exporter under test: the whole output as one text, and the warnings.
type exporter struct {
	name string
	run  func(*config.Config) ([]byte, []Warning, error)
}

func exporters() []exporter {
	systemd := func(version int) func(*config.Config) ([]byte, []Warning, error) {
		return func(cfg *config.Config) ([]byte, []Warning, error) {
			files, ws, err := Systemd(cfg, SystemdOptions{Prefix: "app", Version: version})
			var b bytes.Buffer
			for _, f := range files {
				b.WriteString(f.Name + "\n")
				b.Write(f.Data)
			}
			return b.Bytes(), ws, err
		}
	}
	kubernetes := func(pod bool) func(*config.Config) ([]byte, []Warning, error) {
		return func(cfg *config.Config) ([]byte, []Warning, error) {
			return Kubernetes(cfg, KubernetesOptions{Image: "img", Name: "app", Pod: pod})
		}
	}
	return []exporter{
		{"systemd", systemd(0)},
		{"systemd 254", systemd(254)},
		{"kubernetes", kubernetes(false)},
		{"kubernetes --pod", kubernetes(true)},
	}
}

// names reports whether warning key wk (relative to its program, or
// "supervisor.…") names key: the key itself, a table it is in, or a key
// inside it ("depends_on.db" names depends_on). "*" in key is any name.
func names(key, wk string) bool {
	k := strings.Split(key, ".")
	// restart_rules[0] is restart_rules.0.
	w := strings.Split(strings.NewReplacer("[", ".", "]", "").Replace(wk), ".")
	for i := range min(len(k), len(w)) {
		if k[i] != "*" && k[i] != w[i] {
			return false
		}
	}
	return true
}

// relative is key as the exporters' warnings name it: program keys
// without "program.*.".
func relative(key string) string {
	if rest, ok := strings.CutPrefix(key, "program.*."); ok {
		return rest
	}
	return key
}

// TestExportersMapOrWarnEveryKey holds the exporters to export.go's
// promise: for each key of config.Keys(), set away from its default, each
// exporter's output changes or a warning names the key. A key that does
// neither is dropped silently, and fails here with its name.
func TestExportersMapOrWarnEveryKey(t *testing.T) {
	cases := keyCases()
	for _, key := range config.Keys() {
		if _, ok := cases[key]; !ok && noOtherValue[key] == "" {
			t.Errorf("%s: no case sets it: add one to keyCases", key)
		}
	}
	for _, ex := range exporters() {
		t.Run(strings.ReplaceAll(ex.name, " ", "_"), func(t *testing.T) {
			type keyValue struct {
				key string
				c   keyCase
			}
			var all []keyValue
			for _, key := range config.Keys() {
				if c, ok := cases[key]; ok {
					all = append(all, keyValue{key, c})
				}
				for _, c := range moreCases()[key] {
					all = append(all, keyValue{key, c})
				}
			}
			for _, kv := range all {
				key, c := kv.key, kv.c
				if strings.HasPrefix(key, "procfile.") {
					continue // TestProcfileKeysAreProgramKeys
				}
				// One directory for both, as paths in the output come from it.
				dir := t.TempDir()
				base, _, err := ex.run(keyConfig(t, dir, key, c.base))
				if err != nil {
					t.Errorf("%s: %v", key, err)
					continue
				}
				out, ws, err := ex.run(keyConfig(t, dir, key, c.set))
				if err != nil {
					t.Errorf("%s: %v", key, err)
					continue
				}
				if !bytes.Equal(base, out) {
					continue // mapped
				}

				if !slices.ContainsFunc(ws, func(w Warning) bool {
					return (w.Program == "" || w.Program == "p" || strings.HasPrefix(key, "procfile.")) && names(relative(key), w.Key)
				}) {
					t.Errorf("%s drops %s silently: the output is the same without it, and no warning names it", ex.name, key)
				}
			}
		})
	}
}

// TestKeyCasesAreKeys keeps keyCases to config.Keys(): a case for a key
// that is gone would test nothing.
func TestKeyCasesAreKeys(t *testing.T) {
	keys := config.Keys()
	for key := range keyCases() {
		if !slices.Contains(keys, key) {
			t.Errorf("keyCases has %s, which is not a key", key)
		}
	}
	for key := range noOtherValue {
		if !slices.Contains(keys, key) {
			t.Errorf("noOtherValue has %s, which is not a key", key)
		}
	}
	for key := range moreCases() {
		if !slices.Contains(keys, key) {
			t.Errorf("moreCases has %s, which is not a key", key)
		}
	}
}

// importedKeys walks an imported TOML file and returns the key path of
// each key in it, in config.Keys()'s spelling: a program's, a dependency's
// or a rule's name as "*", and env's variables left out (env is one key).
func importedKeys(t *testing.T, out []byte) []string {
	t.Helper()
	var raw map[string]any
	if _, err := toml.Decode(string(out), &raw); err != nil {
		t.Fatalf("the import is not TOML: %v\n%s", err, out)
	}
	var keys []string
	var walk func(path []string, v any)
	walk = func(path []string, v any) {
		if len(path) > 0 {
			keys = append(keys, strings.Join(path, "."))
		}
		switch x := v.(type) {
		case map[string]any:
			if len(path) == 3 && path[2] == "env" {
				return
			}
			for k, sub := range x {
				next := append(slices.Clip(path), k)
				switch {
				case len(path) == 0 && k == "defaults":
					next = []string{"program", "*"}
				case len(path) == 1 && path[0] == "program", len(path) == 3 && path[2] == "depends_on":
					next[len(path)] = "*"
				}
				walk(next, sub)
			}
		case []map[string]any:
			for _, m := range x {
				walk(append(slices.Clip(path), "*"), m)
			}
		case []any:
			for _, e := range x {
				if m, ok := e.(map[string]any); ok {
					walk(append(slices.Clip(path), "*"), m)
				}
			}
		}
	}
	walk(nil, raw)
	return keys
}

// checkImportedKeys fails for each key of an imported file that is not a
// supervise key (or a table holding some).
func checkImportedKeys(t *testing.T, source string, out []byte, seen map[string]bool) {
	t.Helper()
	known := config.Keys()
	for _, k := range importedKeys(t, out) {
		seen[k] = true
		if k == "program" || k == "program.*" {
			continue
		}
		if !slices.Contains(known, k) && !slices.ContainsFunc(known, func(kk string) bool { return strings.HasPrefix(kk, k+".") }) {
			t.Errorf("%s: the import writes %s, which is not a supervise key", source, k)
		}
	}
}

// TestImportersWriteOnlyKeys is the importers' side of the key list:
// every key the supervisord and process-compose importers write, on the
// real-world files in testdata, is one config.Keys() knows.
func TestImportersWriteOnlyKeys(t *testing.T) {
	seen := map[string]bool{}
	sv, _ := filepath.Glob("testdata/supervisord/*")
	sv = append(sv, "testdata/supervisord.conf", "testdata/supervisord-docker.conf")
	for _, f := range sv {
		out, _, err := ImportSupervisordFile(f)
		if err != nil {
			continue // a file the importer refuses writes no keys
		}
		checkImportedKeys(t, f, out, seen)
	}
	pc, _ := filepath.Glob("testdata/process-compose/*")
	for _, f := range pc {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out, _, err := ImportProcessCompose(f, data, ProcessComposeOptions{Lookup: noLookup})
		if err != nil {
			continue
		}
		checkImportedKeys(t, f, out, seen)
	}
	if len(seen) < 30 {
		t.Fatalf("the imports wrote %d distinct keys: too few to check anything", len(seen))
	}
}

// TestProcfileKeysAreProgramKeys: a [procfile] key reaches an exporter
// only as the values of program and supervisor keys, which
// TestExportersMapOrWarnEveryKey checks; here each must change them.
func TestProcfileKeysAreProgramKeys(t *testing.T) {
	for key, c := range keyCases() {
		if !strings.HasPrefix(key, "procfile.") {
			continue
		}
		dir := t.TempDir()
		base := keyConfig(t, dir, key, c.base)
		set := keyConfig(t, dir, key, c.set)
		if reflect.DeepEqual(base.Programs, set.Programs) && reflect.DeepEqual(base.Supervisor, set.Supervisor) {
			t.Errorf("%s changes no program or supervisor value", key)
		}
	}
}
