package config

import (
	"testing"
	"time"
)

func TestEqualAndNeedsNewProcess(t *testing.T) {
	base := `
[program.web]
command = "server"
env = { A = "1" }
`
	tests := []struct {
		name       string
		src        string
		equal      bool
		newProcess bool
	}{
		{"same", base, true, false},
		{"moved down a line", "\n\n" + base, true, false},
		{"command", "[program.web]\ncommand = \"server2\"\nenv = { A = \"1\" }\n", false, true},
		{"env", "[program.web]\ncommand = \"server\"\nenv = { A = \"2\" }\n", false, true},
		{"sandbox", base + "sandbox = { memory_max = \"1G\" }\n", false, true},
		{"user", base + "user = \"nobody\"\n", false, true},
		{"dir", base + "dir = \"/tmp\"\n", false, true},
		{"backoff only", base + "backoff = { initial = \"1s\" }\n", false, false},
		{"restart policy", base + "restart = \"never\"\n", false, false},
		{"hooks", base + "hooks.pre_start.command = \"echo\"\n", false, false},
		{"instances", base + "instances = 3\n", false, false},
		{"stop signal", base + "stop_signal = \"INT\"\n", false, false},
		{"log file", base + "stdout.file = \"/tmp/x.log\"\n", false, false},
		{"watch", base + "watch = { paths = [\"src\"], signal = \"HUP\" }\n", false, false},
	}
	old := mustParse(t, base).Programs[0]
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustParse(t, tt.src).Programs[0]
			if got := old.Equal(p); got != tt.equal {
				t.Errorf("Equal = %v, want %v", got, tt.equal)
			}
			if got := old.NeedsNewProcess(p); got != tt.newProcess {
				t.Errorf("NeedsNewProcess = %v, want %v", got, tt.newProcess)
			}
		})
	}
	var nilP *Program
	if !nilP.Equal(nil) || nilP.Equal(old) || !nilP.NeedsNewProcess(old) {
		t.Error("nil programs")
	}
	// Empty and missing collections are the same thing.
	a, b := *old, *old
	a.Env, b.Env = nil, map[string]string{}
	a.StopTimeout = time.Second
	b.StopTimeout = time.Second
	if !a.Equal(&b) {
		t.Error("nil and empty env differ")
	}
}
