package export

import (
	"errors"
	"strings"
	"testing"
)

// TestPyFormat pins each branch of supervisord's %-expansion: the
// flags, width and precision, the conversions it takes and refuses, and
// the values the importer's lookups return.
func TestPyFormat(t *testing.T) {
	look := func(name string, plain bool) (any, error) {
		switch name {
		case "s":
			return "héllo", nil
		case "n":
			return 42, nil
		case "neg":
			return -7, nil
		case "plain":
			if plain {
				return "plain", nil
			}
			return "spec", nil
		case "keep":
			return keepSpec{}, nil
		case "mark":
			return keepSpec{marked: true}, nil
		case "drop":
			return keepSpec{drop: true}, nil
		case "ref":
			return envRef("HOME"), nil
		case "a(b)":
			return "nested", nil
		case "nil":
			return nil, nil
		case "big":
			return strings.Repeat("x", maxImportSize), nil
		}
		return nil, errors.New("no " + name)
	}
	for _, c := range []struct{ in, want, err string }{
		{in: "no percent", want: "no percent"},
		{in: "100%% sure", want: "100% sure"},
		{in: "%(s)s and %(n)d", want: "héllo and 42"},
		{in: "[%(s)8s]", want: "[   héllo]"},
		{in: "[%(s)-8s]", want: "[héllo   ]"},
		{in: "[%(s).2s]", want: "[hé]"},
		{in: "[%(s).s]", want: "[]"},
		{in: "[%(s)6.3s]", want: "[   hél]"},
		{in: "[%(n)5d]", want: "[   42]"},
		{in: "[%(n)05d]", want: "[00042]"},
		{in: "[%(n)-05d]", want: "[42   ]"},
		{in: "[%(n).4d]", want: "[0042]"},
		{in: "[%(n)6.4i]", want: "[  0042]"},
		{in: "[%(neg)05d]", want: "[-0007]"},
		{in: "[%(neg).3u]", want: "[-007]"},
		{in: "[%(n)s]", want: "[42]"},
		{in: "[%(n).1s]", want: "[4]"},
		{in: "[%(n)ld]", want: "[42]"},
		{in: "[%(plain)s|%(plain)5s]", want: "[plain| spec]"},
		{in: "[%(keep)-5d]", want: "[%(keep)-5d]"},
		{in: "[%(mark)s]", want: "[" + refMark + "+" + "25286d61726b2973" + refMark + "]"},
		{in: "[%(drop)s]", want: "[]"},
		{in: "[%(ref)s]", want: "[" + refMark + "HOME" + refMark + "]"},
		{in: "[%(a(b))s]", want: "[nested]"},
		{in: "[%(nil)3s]", want: "[   ]"},
		{in: "50%", err: "neither"},
		{in: "%x", err: "neither"},
		{in: "%(s", err: "unclosed"},
		{in: "%(s)", err: "incomplete"},
		{in: "%(s)5", err: "incomplete"},
		{in: "%(s)*s", err: "refuses"},
		{in: "%(s).*s", err: "refuses"},
		{in: "%(s)99999999s", err: "over"},
		{in: "%(s)d", err: "supported"},
		{in: "%(s)+s", err: "supported"},
		{in: "%(n)+d", err: "supported"},
		{in: "%(n) d", err: "supported"},
		{in: "%(n)#x", err: "supported"},
		{in: "%(n)x", err: "supported"},
		{in: "%(nil)d", err: "supported"},
		{in: "%(missing)s", err: "no missing"},
		{in: "%(big)s%(big)s", err: "expands to larger"},
	} {
		got, err := pyFormat(c.in, look)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("pyFormat(%q) = %q, %v; want an error with %q", c.in, got, err, c.err)
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("pyFormat(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}
