package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/supervise-dev/supervise/ctl"
)

// TestCtlVerbsCoverTheProtocol: supervisectl has a command for each verb
// of the control protocol.
func TestCtlVerbsCoverTheProtocol(t *testing.T) {
	var have []string
	for _, c := range ctlVerbs(func(int) error { return nil }) {
		have = append(have, c.Name)
	}
	for _, v := range ctl.Verbs() {
		if !slices.Contains(have, v) {
			t.Errorf("the control protocol's %s has no supervisectl command (have %q)", v, have)
		}
	}
}

// TestReadmeListsCtlVerbs: README names every supervisectl verb in its
// feature list and its paragraph of verbs, and every flag of a verb.
func TestReadmeListsCtlVerbs(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	feature := section(t, readme, "- **`supervisectl`**:", "\n- ", "\n\n")
	verbs := section(t, readme, "`supervisectl` verbs:", "\n\n")
	for _, c := range ctlVerbs(func(int) error { return nil }) {
		if !regexp.MustCompile(`\b` + c.Name + `\b`).MatchString(feature) {
			t.Errorf("README's feature list of supervisectl lacks %s", c.Name)
		}
		if !regexp.MustCompile("`" + c.Name + `[\s` + "`]").MatchString(verbs) {
			t.Errorf("README's paragraph of supervisectl verbs lacks `%s`", c.Name)
		}
		for _, f := range c.Flags {
			if !slices.ContainsFunc(f.Names(), func(n string) bool { return mentionsFlag(readme, n) }) {
				t.Errorf("README does not mention %s's flag %s", c.Name, flagName(f))
			}
		}
	}
}

// section is the text of s from start to the first of the ends after it.
func section(t *testing.T, s, start string, ends ...string) string {
	t.Helper()
	_, rest, ok := strings.Cut(s, start)
	if !ok {
		t.Fatalf("README has no %q", start)
	}
	end := len(rest)
	for _, e := range ends {
		if i := strings.Index(rest, e); i >= 0 {
			end = min(end, i)
		}
	}
	return rest[:end]
}

func mentionsFlag(readme, name string) bool {
	dash := "--"
	if len(name) == 1 {
		dash = "-"
	}
	return regexp.MustCompile(`(?:^|[^\w-])` + dash + name + `\b`).MatchString(readme)
}

func flagName(f cli.Flag) string { return "--" + f.Names()[0] }
