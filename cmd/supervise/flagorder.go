package main

import (
	"maps"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// urfave/cli (as the standard flag package under it) stops reading flags
// at a command's first argument, so `supervisectl restart web --no-wait`
// was refused. flagsFirst rewrites the command line before the library
// sees it, as kubectl's parser reads one: every flag moves to just after
// the command that defines it (the innermost one, so a verb's --json is
// the verb's and --socket after the names is supervisectl's), followed by
// the arguments in their order. It knows each command's flags and which
// take a value from the same cli definitions the library parses with, so
// a flag's value is never mistaken for a name nor a name for a value.
//
// What stays as written:
//   - everything after `--`: arguments, even those that begin with "-";
//   - the arguments of a command whose arguments are a command line to run
//     (runsCommand says which: `exec`, `run-once`): from its first
//     argument on, every word is that command's;
//   - a completion request (the library reads its flag at the very end).
//
// A help flag anywhere asks for the help of the command named before the
// arguments; the rest is dropped (after --help the library would read an
// argument as a help topic).
//
// A flag no command defines is moved too, so the library names it in its
// usual usage error.

// cliScope is one command on the path being read: its flags and its
// subcommands.
type cliScope struct {
	flags    []cli.Flag
	commands []*cli.Command
	builtin  map[string]bool // flags the library adds: name → takes a value (none do)
	cmd      *cli.Command    // nil for the app
}

// takesValue says whether the scope defines flag name, and whether it
// takes a value.
func (s cliScope) takesValue(name string) (value, defined bool) {
	for _, f := range s.flags {
		if slices.Contains(f.Names(), name) {
			v, ok := f.(cli.DocGenerationFlag)
			return ok && v.TakesValue(), true
		}
	}
	v, ok := s.builtin[name]
	return v, ok
}

func (s cliScope) command(name string) *cli.Command {
	for _, c := range s.commands {
		if c.Name == name || slices.Contains(c.Aliases, name) {
			return c
		}
	}
	return nil
}

// flagsFirst returns args (args[0] the program's name) with the flags
// placed where urfave/cli reads them; see above.
func flagsFirst(app *cli.App, args []string, runsCommand func(*cli.Command) bool) []string {
	if len(args) < 2 || args[len(args)-1] == "--"+cli.BashCompletionFlag.Names()[0] {
		return args
	}
	help := map[string]bool{}
	for _, n := range cli.HelpFlag.Names() {
		help[n] = false
	}
	appBuiltin := maps.Clone(help)
	if app.Version != "" && !app.HideVersion {
		for _, n := range cli.VersionFlag.Names() {
			appBuiltin[n] = false
		}
	}
	r := reorder{
		help:   help,
		scopes: []cliScope{{flags: app.Flags, commands: app.Commands, builtin: appBuiltin}},
		placed: [][]string{{args[0]}},
	}
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			r.dashdash = true
			r.positional = append(r.positional, args[i+1:]...)
			break
		}
		if len(a) > 1 && a[0] == '-' {
			i = r.flag(args, i)
			continue
		}
		cur := r.scopes[len(r.scopes)-1]
		if len(r.positional) == 0 {
			if sub := cur.command(a); sub != nil {
				r.scopes = append(r.scopes, cliScope{flags: sub.Flags, commands: sub.Subcommands, builtin: help, cmd: sub})
				r.placed = append(r.placed, []string{a})
				continue
			}
			if cur.cmd != nil && runsCommand(cur.cmd) {
				r.positional = append(r.positional, args[i:]...)
				break
			}
		}
		r.positional = append(r.positional, a)
	}
	return r.commandLine(len(args))
}

// reorder is flagsFirst's reading so far.
type reorder struct {
	help       map[string]bool // the help flag's names
	scopes     []cliScope      // the commands named so far, the app first
	placed     [][]string      // per scope: its name, then its flags
	positional []string
	dashdash   bool // "--" was given
	helped     bool // a help flag was given
}

// flag places the flag args[i] (with its value, when it takes one given
// apart) with the innermost command defining it, and returns the index
// of the last word it took.
func (r *reorder) flag(args []string, i int) int {
	a := args[i]
	name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
	if _, ok := r.help[name]; ok {
		r.helped = true
	}
	at := len(r.scopes) - 1 // an unknown flag: the innermost command reports it
	value := false
	for j := len(r.scopes) - 1; j >= 0; j-- {
		if v, ok := r.scopes[j].takesValue(name); ok {
			at, value = j, v
			break
		}
	}
	r.placed[at] = append(r.placed[at], a)
	if value && !hasValue && i+1 < len(args) {
		i++
		r.placed[at] = append(r.placed[at], args[i])
	}
	return i
}

// commandLine is the command line rewritten, of about n words.
func (r *reorder) commandLine(n int) []string {
	out := make([]string, 0, n)
	if r.helped {
		// The library reads an argument after --help as a help topic:
		// the help of the command named is what was asked for.
		for _, p := range r.placed {
			out = append(out, p[0])
		}
		return append(out, "--help")
	}
	for _, p := range r.placed {
		out = append(out, p...)
	}
	if r.dashdash {
		out = append(out, "--")
	}
	return append(out, r.positional...)
}
