package config

// The sandbox table: namespaces, cgroup limits, umask and rlimits.

import (
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

var hostnameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]{0,62})$`) })

// sandboxDecoding is one sandbox table being decoded.
type sandboxDecoding struct {
	*Sandbox
	isDefaults bool
}

func (d *decoder) sandbox(n *node, isDefaults bool) Sandbox {
	sb := Sandbox{Umask: -1}
	decodeKeys(d, d.table(n, "a table: [program.NAME.sandbox]"), &sandboxDecoding{&sb, isDefaults}, sandboxKeys)
	return sb
}

// sandboxKeys are the keys of [program.NAME.sandbox]; namespaces comes
// before hostname, which needs "uts".
var sandboxKeys = []key[*sandboxDecoding]{
	{"namespaces", func(d *decoder, sb *sandboxDecoding, v *node) {
		for i, x := range d.array(v, `an array like ["pid", "mount"]`) {
			path := elem(v.path, i)
			s, ok := x.(string)
			switch {
			case !ok:
				d.errorf(path, "must be a string (got %s)", describe(x))
			case !slices.Contains(namespaces, s):
				d.errorf(path, "must be one of %s (got %q)", strings.Join(namespaces, ", "), s)
			case slices.Contains(sb.Namespaces, s):
				d.errorf(path, "%q is listed twice", s)
			default:
				sb.Namespaces = append(sb.Namespaces, s)
			}
		}
	}},
	{"hostname", func(d *decoder, sb *sandboxDecoding, v *node) {
		s, ok := d.str(v)
		if !ok {
			return
		}
		if !hostnameRE().MatchString(s) {
			d.errorf(v.path, "%q is not a valid hostname (1-64 letters, digits, '-' or '.')", s)
		} else if !sb.isDefaults && !slices.Contains(sb.Namespaces, "uts") {
			d.errorf(v.path, `needs the "uts" namespace: add "uts" to namespaces`)
		}
		sb.Hostname = s
	}},
	{"memory_max", func(d *decoder, sb *sandboxDecoding, v *node) { sb.MemoryMax, _ = d.size(v) }},
	{"cpu_max", (*decoder).cpuMax},
	{"pids_max", func(d *decoder, sb *sandboxDecoding, v *node) {
		if i, ok := d.integer(v, 0, 1<<31); ok {
			if i > 0 && i < 8 {
				// The sandbox's init and its runtime threads count against
				// pids.max until the program is exec'd.
				d.errorf(v.path, "must be 0 (no limit) or at least 8 (got %d): the sandbox init needs a few", i)
			}
			sb.PidsMax = i
		}
	}},
	{"no_new_privileges", func(d *decoder, sb *sandboxDecoding, v *node) { setBool(d, v, &sb.NoNewPrivileges) }},
	{"umask", (*decoder).umask},
	{"rlimits", func(d *decoder, sb *sandboxDecoding, v *node) { sb.Rlimits = d.rlimits(v, sb.isDefaults) }},
}

func (d *decoder) cpuMax(sb *sandboxDecoding, v *node) {
	switch x := v.v.(type) {
	case float64:
		sb.CPUMax = x
	case int64:
		sb.CPUMax = float64(x)
	default:
		d.errorf(v.path, "must be a number of cores like 0.5 (got %s)", describe(v.v))
	}
	if sb.CPUMax < 0 || sb.CPUMax != sb.CPUMax || sb.CPUMax > 1<<20 {
		d.errorf(v.path, "must be a number of cores above 0 (got %v)", sb.CPUMax)
		sb.CPUMax = 0
	}
}

func (d *decoder) umask(sb *sandboxDecoding, v *node) {
	switch x := v.v.(type) {
	case string:
		m, err := parseUmask(x)
		if err != nil {
			d.errorf(v.path, "%v", err)
			return
		}
		sb.Umask = m
	case int64:
		if x < 0 || x > 0o777 {
			d.errorf(v.path, "must be between 0o000 and 0o777 (got %#o); write it as \"0022\" or 0o022", x)
			return
		}
		sb.Umask = int(x)
	default:
		d.errorf(v.path, "must be an octal string like \"0022\" (got %s)", describe(v.v))
	}
}

// rlimitsDecoding is one rlimits table being decoded.
type rlimitsDecoding struct {
	out        map[string]Rlimit
	isDefaults bool
}

// rlimitsKeys are the keys of [program.NAME.sandbox.rlimits]: one row per
// resource rlimitResources knows, in name order.
var rlimitsKeys = sync.OnceValue(func() []key[*rlimitsDecoding] {
	var keys []key[*rlimitsDecoding]
	for _, name := range slices.Sorted(maps.Keys(rlimitResources)) {
		bytes := rlimitResources[name].bytes
		keys = append(keys, key[*rlimitsDecoding]{name, func(d *decoder, rs *rlimitsDecoding, v *node) {
			if rl, ok := d.rlimit(v, bytes, rs.isDefaults); ok {
				rs.out[name] = rl
			}
		}})
	}
	return keys
})

func (d *decoder) rlimits(n *node, isDefaults bool) map[string]Rlimit {
	rs := &rlimitsDecoding{out: map[string]Rlimit{}, isDefaults: isDefaults}
	decodeKeys(d, d.table(n, "a table like { nofile = 1024, core = 0 }"), rs, rlimitsKeys())
	return rs.out
}

// rlimitDecoding is one { soft, hard } table being decoded.
type rlimitDecoding struct {
	Rlimit
	bytes      bool
	soft, hard *node // when valid
}

// rlimitKeys are the keys of one rlimit's table form.
var rlimitKeys = []key[*rlimitDecoding]{
	{"soft", func(d *decoder, rl *rlimitDecoding, v *node) {
		if x, ok := d.rlimitValue(v, rl.bytes); ok {
			rl.Soft, rl.soft = x, v
		}
	}},
	{"hard", func(d *decoder, rl *rlimitDecoding, v *node) {
		if x, ok := d.rlimitValue(v, rl.bytes); ok {
			rl.Hard, rl.hard = x, v
		}
	}},
}

// rlimit reads one resource's limit: a value for both soft and hard, or
// a table with both (either alone in [defaults]).
func (d *decoder) rlimit(v *node, bytes, isDefaults bool) (Rlimit, bool) {
	sub, ok := v.v.(map[string]*node)
	if !ok {
		x, ok := d.rlimitValue(v, bytes)
		return Rlimit{Soft: x, Hard: x}, ok
	}
	if (sub["soft"] == nil || sub["hard"] == nil) && !isDefaults {
		d.known(sub, keyNames(rlimitKeys)...)
		d.errorf(v.path, "needs both soft and hard (or one number for both)")
		return Rlimit{}, false
	}
	rl := &rlimitDecoding{bytes: bytes}
	decodeKeys(d, sub, rl, rlimitKeys)
	if rl.soft != nil && rl.hard != nil && rl.Soft > rl.Hard {
		d.errorf(rl.soft.path, "must not be above hard (%s > %s)", rlimitString(rl.Soft), rlimitString(rl.Hard))
	}
	return rl.Rlimit, true
}

func rlimitString(v uint64) string {
	if v == Unlimited {
		return "unlimited"
	}
	return strconv.FormatUint(v, 10)
}

// rlimitValue reads a count, "unlimited", or for byte limits a size.
func (d *decoder) rlimitValue(n *node, bytes bool) (uint64, bool) {
	switch x := n.v.(type) {
	case int64:
		if x < 0 {
			d.errorf(n.path, "must not be negative (got %d)", x)
			return 0, false
		}
		return uint64(x), true
	case string:
		if strings.EqualFold(x, "unlimited") || strings.EqualFold(x, "infinity") {
			return Unlimited, true
		}
		if bytes {
			v, err := ParseSize(x)
			if err != nil {
				d.errorf(n.path, "%v", err)
				return 0, false
			}
			return uint64(v), true
		}
		if v, err := strconv.ParseUint(x, 10, 64); err == nil {
			return v, true
		}
	}
	what := "a number or \"unlimited\""
	if bytes {
		what = "a number, a size like \"64MiB\", or \"unlimited\""
	}
	d.errorf(n.path, "must be %s (got %s)", what, describe(n.v))
	return 0, false
}
