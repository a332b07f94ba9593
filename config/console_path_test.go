package config

import (
	"strings"
	"testing"
)

// A log file naming supervise's own stdout or stderr (a container's
// /dev/stdout idiom) is the console without rotation: never a file
// opened, rotated or replaced at that name.
func TestOutputConsolePath(t *testing.T) {
	for _, path := range []string{"/dev/stdout", "/dev/stderr", "/dev/fd/1", "/dev/fd/2", "/proc/self/fd/1", "/proc/self/fd/2", "/dev//stdout"} {
		t.Run(path, func(t *testing.T) {
			src := "[program.web]\ncommand = \"x\"\nstdout = { console = false }\n[program.web.stderr]\nfile = \"" + path + "\"\nmax_size = 0\n"
			cfg, err := Parse("s.toml", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			o := cfg.Program("web").Stderr
			if o.File != "" || !o.Console {
				t.Errorf("stderr %+v, want the console and no file", o)
			}
		})
	}
	_, err := Parse("s.toml", []byte("[program.web]\ncommand = \"x\"\nstdout = { console = false, file = \"/dev/stdout\" }\n"))
	if err == nil || !strings.Contains(err.Error(), "s.toml:3: program.web.stdout.file: /dev/stdout is supervise's own output, which console = false turns off") {
		t.Errorf("console = false with /dev/stdout: %v", err)
	}
	// Other paths under /dev or /proc stay files.
	cfg, err := Parse("s.toml", []byte("[program.web]\ncommand = \"x\"\nstdout = { file = \"/dev/fd/3\" }\n"))
	if err != nil || cfg.Program("web").Stdout.File != "/dev/fd/3" {
		t.Errorf("/dev/fd/3: %v %+v", err, cfg)
	}
}
