package main

import (
	"slices"
	"strings"
	"testing"
)

func TestFlagsFirst(t *testing.T) {
	var code int
	for _, tc := range []struct {
		name string
		ctl  bool // supervisectl's tree, else supervise's
		in   string
		want string
	}{
		{"flag after a name", true, "restart web --no-wait", "restart --no-wait web"},
		{"flags after several names", true, "stop web:0 db --with-dependents --json", "stop --with-dependents --json web:0 db"},
		{"value after a name", true, "logs web -n 5", "logs -n 5 web"},
		{"value with =", true, "logs web --lines=5 db", "logs --lines=5 web db"},
		{"value that looks like a name", true, "restart web --timeout web", "restart --timeout web web"},
		{"value that looks like a flag", true, "restart web --timeout -1s", "restart --timeout -1s web"},
		{"bool between names", true, "status web --json db", "status --json web db"},
		{"global flag after the verb's names", true, "status web --socket /s --json", "--socket /s status --json web"},
		{"global short flag", true, "logs web -s /s -f", "-s /s logs -f web"},
		{"flags in place already", true, "--socket /s restart --no-wait web", "--socket /s restart --no-wait web"},
		{"json is the verb's when the verb has it", true, "--json status web --json", "--json status --json web"},
		{"-- ends the flags", true, "signal HUP -- -web --json", "signal -- HUP -web --json"},
		{"-- with flags before it", true, "logs web -f -- -n", "logs -f -- web -n"},
		{"a lone - is an argument", true, "logs - -f", "logs -f -"},
		{"help after a name", true, "restart web --no-wait --help", "restart --help"},
		{"help of supervise ctl's verb", false, "ctl --socket /s logs web -h", "ctl logs --help"},
		{"unknown flag: the verb reports it", true, "restart web --bogus", "restart --bogus web"},
		{"value flag at the end", true, "restart web --timeout", "restart --timeout web"},
		{"no verb", true, "--json", "--json"},
		{"unknown verb", true, "bogus x --json", "--json bogus x"},

		{"import: -o after the file", false, "import supervisord FILE -o OUT", "import supervisord -o OUT FILE"},
		{"export: flags around", false, "export kubernetes -c f.toml out --image img -n ns", "export kubernetes -c f.toml --image img -n ns out"},
		{"ctl verb under supervise", false, "ctl restart web --no-wait --socket /s", "ctl --socket /s restart --no-wait web"},
		{"start: flags after names", false, "start web worker -m web=2 -d /app", "start -m web=2 -d /app web worker"},
		{"bare supervise: a value named like a command", false, "-c run", "-c run"},
		{"bare supervise with a file", false, "Procfile.dev -m web=2", "-m web=2 Procfile.dev"},
		{"version is the app's", false, "run --version", "--version run"},
		{"check: file then flag", false, "check f.toml --config g.toml", "check --config g.toml f.toml"},
		{"run-once: the command's flags stay its own", false, "run-once rails s -p 3000", "run-once rails s -p 3000"},
		{"run-once: own flags before, --", false, "run-once -p 5001 -- rails s -p 3000", "run-once -p 5001 -- rails s -p 3000"},
		{"exec: the command's flags stay its own", false, "exec --grace 1s sh -c x -v", "exec --grace 1s sh -c x -v"},
		{"exec: --", false, "exec -- sh -x", "exec -- sh -x"},
		{"completion request untouched", false, "restart web --generate-bash-completion", "restart web --generate-bash-completion"},
		{"help command", false, "help run", "help run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app, argv0 := superviseApp(&code), "supervise"
			if tc.ctl {
				app, argv0 = ctlApp(&code), "supervisectl"
			}
			got := flagsFirst(app, append([]string{argv0}, strings.Fields(tc.in)...), runsCommand)
			want := append([]string{argv0}, strings.Fields(tc.want)...)
			if !slices.Equal(got, want) {
				t.Errorf("%s %s:\ngot  %q\nwant %q", argv0, tc.in, got[1:], want[1:])
			}
		})
	}
}
