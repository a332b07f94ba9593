package integration

import (
	"context"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// dotenvCase is one line of a .env file, what a program run by supervise
// sees of its variable, and how foreman (Debian's ruby-foreman) compares:
// differs is "" where foreman gives the same, else why supervise differs.
type dotenvCase struct {
	name, line string
	want       *string // nil: unset
	differs    string
}

func str(s string) *string { return &s }

const (
	whyInterp  = "interpolated when the file is read, as docker compose and the dotenv libraries do; foreman leaves the text and only substitutes $NAME into the Procfile's command line"
	whyComment = `" #" starts a comment after an unquoted value (compose, dotenv); foreman keeps it as text`
)

var dotenvCases = []dotenvCase{
	{"C01", "C01=plain", str("plain"), ""},
	{"C02", "C02 = spaced", str("spaced"), "blanks around = are allowed, as compose allows them; foreman drops the line silently"},
	{"C03", "C03=trailing   ", str("trailing"), "an unquoted value is trimmed (compose, dotenv); foreman keeps the blanks"},
	{"C04", `C04="double quoted"`, str("double quoted"), ""},
	{"C05", `C05='single quoted'`, str("single quoted"), ""},
	{"C06", "C06=", str(""), ""},
	{"C07", "C07=1 # inline comment", str("1"), whyComment},
	{"C08", "export C08=exported", str("exported"), "a shell's export prefix is honoured, so one file serves `source .env` too; foreman drops the line"},
	{"C09", "C09=${FOO}-interp", str("plain-interp"), whyInterp},
	{"C10", "C10=$FOO-bare", str("plain-bare"), whyInterp},
	{"C11", `C11="${FOO} in double"`, str("plain in double"), whyInterp},
	{"C12", `C12='${FOO} in single'`, str("${FOO} in single"), ""},
	{"C13", `C13="line1\nline2"`, str("line1\nline2"), ""},
	{"C14", `C14='line1\nline2'`, str(`line1\nline2`), ""},
	{"C15", "C15=${NOPE_UNSET}-x", str("-x"), whyInterp},
	{"C16", "C16=${LATER}-x", str("-x"), whyInterp + " (a variable from a later line is not yet set)"},
	{"C17", "C17=${HOME_FOR_TEST}", str("fromenv"), whyInterp + " (from the supervisor's environment)"},
	{"C18", `C18="a\$FOO"`, str("a$FOO"), ""},
	{"C19", "C19=a=b=c", str("a=b=c"), ""},
	{"C20", `C20="quoted" # comment`, str("quoted"), whyComment + " (foreman then keeps the quotes too)"},
	{"C21", "  C21=indented", str("indented"), "leading blanks are allowed; foreman drops the line silently"},
	{"C22", "C22=first\nC22=second", str("second"), ""},
	{"C23", `C23="tab\there"`, str("tab\there"), `\t in double quotes is a tab, as in a shell's $'…'; foreman drops the backslash ("tabthere")`},
	{"C24", "C24=${FOO}${FOO}", str("plainplain"), whyInterp},
	{"C25", "C25=$FOO$FOO", str("plainplain"), whyInterp},
	{"C26", "C26=pa$$word", str("pa$word"), "$$ is a literal $, as in the TOML env and compose; foreman keeps both"},
	{"C27", "C27=\"multi\nline\"", str("multi\nline"), "a quoted value may span lines; foreman reads only the first line"},
	{"C28", `C28=a\$FOO`, str("a$FOO"), `\$ is a literal $ in an unquoted value too; foreman keeps the backslash`},
	{"C29", `C29="${NOPE_UNSET:-def}"`, str("def"), whyInterp + " (with a default)"},
	{"C30", "C30=$", str("$"), ""},
}

// TestDotenvAgainstForeman runs the same Procfile and .env under foreman
// and under supervise and compares what the program sees, case by case:
// supervise must give the table's value, and foreman must agree exactly
// where the table says it does (so the table stays true).
func TestDotenvAgainstForeman(t *testing.T) {
	foreman, err := exec.LookPath("foreman")
	if err != nil {
		t.Fatal("foreman is missing: apt-get install ruby-foreman (scripts/test.sh does)")
	}
	dir := t.TempDir()
	var env, names strings.Builder
	env.WriteString("# the reference variable\nFOO=plain\n")
	for _, c := range dotenvCases {
		env.WriteString(c.line + "\n")
		names.WriteString(" " + c.name)
	}
	env.WriteString("LATER=later\n")
	// Each variable as "NAME set HEX" or "NAME unset": values with
	// newlines, blanks and $ survive the console.
	procfile := "web: for v in" + names.String() + `; do eval "s=\${$v+set}; x=\$$v"; printf '%s %s %s\n' "$v" "${s:-unset}" "$(printf '%s' "$x" | od -An -tx1 | tr -d ' \n')"; done` + "\n"
	if err := os.WriteFile(filepath.Join(dir, ".env"), []byte(env.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "Procfile"), []byte(procfile), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(name string, argv ...string) map[string]*string {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOME_FOR_TEST=fromenv", "NO_COLOR=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
		got := map[string]*string{}
		re := regexp.MustCompile(`(C\d\d) (set|unset) ?([0-9a-f]*)\s*$`)
		for _, l := range strings.Split(string(out), "\n") {
			m := re.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			if m[2] == "unset" {
				got[m[1]] = nil
				continue
			}
			b, err := hex.DecodeString(m[3])
			if err != nil {
				t.Fatalf("%s: %q: %v", name, l, err)
			}
			got[m[1]] = str(string(b))
		}
		if len(got) != len(dotenvCases) {
			t.Fatalf("%s printed %d of %d variables:\n%s", name, len(got), len(dotenvCases), out)
		}
		return got
	}
	ours := run("supervise", binary, "run", "-c", "Procfile", "--socket", filepath.Join(dir, "s.sock"))
	theirs := run("foreman", foreman, "start")
	show := func(p *string) string {
		if p == nil {
			return "unset"
		}
		return strings.ReplaceAll(*p, "\n", `\n`)
	}
	same := 0
	for _, c := range dotenvCases {
		if show(ours[c.name]) != show(c.want) {
			t.Errorf("%s %q: supervise gives %q, want %q", c.name, c.line, show(ours[c.name]), show(c.want))
		}
		agree := show(theirs[c.name]) == show(c.want)
		switch {
		case c.differs == "" && !agree:
			t.Errorf("%s %q: foreman gives %q, the table says it agrees on %q", c.name, c.line, show(theirs[c.name]), show(c.want))
		case c.differs != "" && agree:
			t.Errorf("%s %q: foreman agrees (%q), the table says it differs: %s", c.name, c.line, show(theirs[c.name]), c.differs)
		case agree:
			same++
		}
	}
	t.Logf("%d cases: foreman agrees on %d, supervise deliberately differs on %d", len(dotenvCases), same, len(dotenvCases)-same)
}
