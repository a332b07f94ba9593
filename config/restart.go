package config

// The restart tables: the crash backoff and restart_rules.

import "slices"

// backoffDecoding is one backoff table being decoded: which of initial
// and max the file set, for the defaults of the other.
type backoffDecoding struct {
	*Backoff
	setInitial, setMax bool
}

// backoffKeys are the keys of [program.NAME.backoff].
var backoffKeys = []key[*backoffDecoding]{
	{"initial", func(d *decoder, b *backoffDecoding, v *node) { b.Initial, _ = d.duration(v); b.setInitial = true }},
	{"max", func(d *decoder, b *backoffDecoding, v *node) { b.Max, _ = d.duration(v); b.setMax = true }},
	{"reset_after", func(d *decoder, b *backoffDecoding, v *node) {
		if dur, ok := d.duration(v); ok {
			if dur == 0 {
				d.errorf(v.path, "must be more than 0 (a run this long forgives past crashes)")
			}
			b.ResetAfter = dur
		}
	}},
}

func (d *decoder) backoff(n *node, isDefaults bool) Backoff {
	b := Backoff{Initial: DefaultBackoffInitial, Max: DefaultBackoffMax}
	bd := &backoffDecoding{Backoff: &b}
	decodeKeys(d, d.table(n, `a table like { initial = "10s", max = "5m" }`), bd, backoffKeys)
	if !bd.setMax && b.Initial > b.Max {
		b.Max = b.Initial // initial alone above the 5m default: never shrink it
	}
	if bd.setMax && !bd.setInitial && b.Max < b.Initial {
		b.Initial = b.Max // max alone below 10s lowers the first delay, as the kubelet's node-wide maximum does
	}
	if b.Max < b.Initial && !isDefaults {
		d.errorf(append(slices.Clip(n.path), "max"), "must not be less than initial (%v < %v)", b.Max, b.Initial)
	}
	if b.ResetAfter == 0 {
		b.ResetAfter = DefaultBackoffResetAfter
	}
	return b
}

// ruleDecoding is one restart rule being decoded.
type ruleDecoding struct {
	RestartRule
	ok bool // exit_codes was valid
}

// restartRuleKeys are the keys of one restart rule.
var restartRuleKeys = []key[*ruleDecoding]{
	{"action", func(d *decoder, r *ruleDecoding, v *node) { r.Action, _ = d.enum(v, RuleRestart) }},
	{"exit_codes", func(d *decoder, r *ruleDecoding, v *node) { r.ok = d.exitCodes(v, &r.RestartRule) }},
}

// matchDecoding is a rule's exit_codes table being decoded.
type matchDecoding struct {
	*RestartRule
	badValues bool
}

// restartRuleMatchKeys are the keys of a rule's exit_codes table.
var restartRuleMatchKeys = []key[*matchDecoding]{
	{"operator", func(d *decoder, m *matchDecoding, v *node) { m.Operator, _ = d.enum(v, RuleIn, RuleNotIn) }},
	{"values", func(d *decoder, m *matchDecoding, v *node) {
		arr := anySlice(v.v)
		if len(arr) == 0 || len(arr) > 255 {
			d.errorf(v.path, "needs values: an array of 1 to 255 exit codes like [42] (a signal N is 128+N)")
			m.badValues = true
			return
		}
		for j, x := range arr {
			if c, ok := d.integer(&node{path: elem(v.path, j), v: x}, 0, 255); ok {
				m.Values = append(m.Values, int(c))
			}
		}
	}},
}

// restartRules reads restart_rules: an array of tables like
// { action = "restart", exit_codes = { operator = "In", values = [42] } }.
func (d *decoder) restartRules(n *node) []RestartRule {
	items := anySlice(n.v)
	if items == nil {
		d.errorf(n.path, `must be an array of tables like [{ action = "restart", exit_codes = { operator = "In", values = [42] } }] (got %s)`, describe(n.v))
		return nil
	}
	if len(items) > 64 {
		d.errorf(n.path, "at most 64 rules (got %d)", len(items))
		return nil
	}
	var rules []RestartRule
	for i, x := range items {
		en := toNode(elem(n.path, i), x)
		t := d.table(en, `a table like { action = "restart", exit_codes = { operator = "In", values = [42] } }`)
		if t == nil {
			continue
		}
		r := &ruleDecoding{RestartRule: RestartRule{Action: RuleRestart}}
		decodeKeys(d, t, r, restartRuleKeys)
		if t["exit_codes"] == nil {
			d.errorf(en.path, "needs exit_codes = { operator = \"In\" or \"NotIn\", values = [...] }")
			continue
		}
		if r.ok {
			rules = append(rules, r.RestartRule)
		}
	}
	return rules
}

// exitCodes reads a rule's exit_codes table into r, and reports whether
// it was valid enough to keep the rule.
func (d *decoder) exitCodes(ec *node, r *RestartRule) bool {
	et := d.table(ec, `a table like { operator = "In", values = [42] }`)
	if et == nil {
		return false
	}
	m := &matchDecoding{RestartRule: r}
	decodeKeys(d, et, m, restartRuleMatchKeys)
	if et["operator"] == nil {
		d.errorf(ec.path, "needs operator = \"In\" or \"NotIn\"")
	}
	if et["values"] == nil {
		d.errorf(ec.path, "needs values: an array of 1 to 255 exit codes like [42] (a signal N is 128+N)")
		return false
	}
	return !m.badValues
}

// anySlice returns v as a []any when it is an array (TOML decodes an array
// of tables as []map[string]any), else nil.
func anySlice(v any) []any {
	switch x := v.(type) {
	case []any:
		return x
	case []map[string]any:
		out := make([]any, len(x))
		for i, m := range x {
			out[i] = m
		}
		return out
	}
	return nil
}
