package config

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// A running config crosses an upgrade as JSON: what comes out is the
// config that went in, so that the reload after the take-over sees no
// change where the file has none (a spurious one would reset backoffs or
// restart programs).
func TestCarriedConfigRoundTrips(t *testing.T) {
	example, err := Load(filepath.Join("..", "config.example.toml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	own, err := Parse(filepath.Join(dir, "supervise.toml"), []byte(`
[supervisor]
exit_on = ["web"]
[program.web]
command = "sleep 1000"
instances = 3
listen = ["tcp://127.0.0.1:8080"]
depends_on = { db = "running" }
sandbox = { memory_max = "64M", rlimits = { nofile = 1024, core = "unlimited" } }
probes.readiness = { http = "http://127.0.0.1:8080/", failure_threshold = 4 }
probes.liveness = { tcp = "127.0.0.1:8080", period = "3s" }
hooks.pre_stop = { sleep = "1s" }
watch = { paths = ["src"], include = ["*.go"], signal = "HUP" }
[program.db]
command = ["sleep", "1000"]
[program.nightly]
command = ["true"]
schedule = "30 2 * * *"
timezone = "Europe/Berlin"
concurrency = "allow"
jitter = "10s"
max_runtime = "1h"
[program.often]
command = ["true"]
schedule = "@every 5s"
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []*Config{example, own} {
		data, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var back Config
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatalf("%s: %v", cfg.File, err)
		}
		if err := back.CheckCarried(); err != nil {
			t.Fatalf("%s: %v", cfg.File, err)
		}
		if !reflect.DeepEqual(&back, cfg) {
			t.Errorf("%s: the config changed on its way across:\n%s\n%+v", cfg.File, data, back)
		}
		for i, p := range cfg.Programs {
			if !p.Equal(back.Programs[i]) {
				t.Errorf("%s: program %s is not Equal after the round trip", cfg.File, p.Name)
			}
		}
	}
	if p := own.Program("nightly"); p.Schedule.Spec == nil || p.Schedule.Location.String() != "Europe/Berlin" {
		t.Fatalf("nightly's schedule: %+v", p.Schedule)
	}
}

// CheckCarried refuses what the supervisor could not run on: the config
// is another binary's output.
func TestCheckCarriedRefuses(t *testing.T) {
	good := func() *Config {
		return &Config{File: "s.toml", Dir: "/etc", Supervisor: Supervisor{Workers: 2, ExitOn: []string{"a"}},
			Programs: []*Program{{Name: "a", Command: []string{"x"}, Instances: 1}, {Name: "b", Command: []string{"x"}, Instances: 1, DependsOn: []string{"a"}}}}
	}
	cases := []struct {
		name string
		edit func(c *Config)
		want string
	}{
		{"relative dir", func(c *Config) { c.Dir = "etc" }, "directory"},
		{"bad name", func(c *Config) { c.Programs[0].Name = "a:1" }, `":"`},
		{"twice", func(c *Config) { c.Programs[1].Name = "a"; c.Programs[1].DependsOn = nil }, "named twice"},
		{"no command", func(c *Config) { c.Programs[0].Command = nil }, "no command"},
		{"instances", func(c *Config) { c.Programs[0].Instances = 0 }, "instances"},
		{"unknown dependency", func(c *Config) { c.Programs[1].DependsOn = []string{"z"} }, `"z"`},
		{"cycle", func(c *Config) { c.Programs[0].DependsOn = []string{"b"} }, "cycle"},
		{"exit_on", func(c *Config) { c.Supervisor.ExitOn = []string{"z"} }, "exit_on"},
		{"null program", func(c *Config) { c.Programs[0] = nil }, "null"},
	}
	if err := good().CheckCarried(); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		cfg := good()
		c.edit(cfg)
		if err := cfg.CheckCarried(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: CheckCarried = %v, want an error with %q", c.name, err, c.want)
		}
	}
	var s Schedule
	for _, bad := range []string{`{"expr":"61 * * * *"}`, `{"expr":"* * * * *","timezone":"Nowhere/City"}`, `{"expr":"* * * * *","concurrency":"often"}`} {
		if err := json.Unmarshal([]byte(bad), &s); err == nil {
			t.Errorf("schedule %s taken", bad)
		}
	}
}
