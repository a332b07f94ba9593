package config

// The hooks table: commands, HTTP requests or sleeps around a program's
// start and stop.

import (
	"maps"
	"net/url"
	"slices"
	"strings"
)

// hooksDecoding is one hooks table being decoded.
type hooksDecoding struct {
	*Hooks
	isDefaults bool
}

// hooksKeys are the keys of [program.NAME.hooks]: the hooks by when they run.
var hooksKeys = []key[*hooksDecoding]{
	{"pre_start", func(d *decoder, h *hooksDecoding, v *node) { h.PreStart = d.hook(v, h.isDefaults) }},
	{"post_start", func(d *decoder, h *hooksDecoding, v *node) { h.PostStart = d.hook(v, h.isDefaults) }},
	{"pre_stop", func(d *decoder, h *hooksDecoding, v *node) { h.PreStop = d.hook(v, h.isDefaults) }},
	{"post_stop", func(d *decoder, h *hooksDecoding, v *node) { h.PostStop = d.hook(v, h.isDefaults) }},
}

func (d *decoder) hooks(n *node, isDefaults bool) Hooks {
	var h Hooks
	decodeKeys(d, d.table(n, "a table: [program.NAME.hooks.pre_start] …"), &hooksDecoding{&h, isDefaults}, hooksKeys)
	return h
}

// hookKeys are the keys of one hook, [program.NAME.hooks.pre_start].
var hookKeys = []key[*Hook]{
	{"command", func(d *decoder, h *Hook, v *node) { h.Command, _ = d.command(v) }},
	{"http", func(d *decoder, h *Hook, v *node) { h.HTTP = d.httpHook(v) }},
	{"sleep", func(d *decoder, h *Hook, v *node) {
		if dur, ok := d.duration(v); ok {
			if dur <= 0 {
				d.errorf(v.path, "must be more than 0")
			}
			h.Sleep = dur
		}
	}},
	{"timeout", func(d *decoder, h *Hook, v *node) {
		if dur, ok := d.duration(v); ok {
			if dur == 0 {
				d.errorf(v.path, "must be more than 0")
			}
			h.Timeout = dur
		}
	}},
}

func (d *decoder) hook(n *node, isDefaults bool) *Hook {
	t := d.table(n, `a table like { command = "./migrate.sh", timeout = "30s" }`)
	if t == nil {
		return nil
	}
	h := &Hook{Timeout: DefaultHookTimeout}
	decodeKeys(d, t, h, hookKeys)
	var given []*node
	for _, v := range []*node{t["command"], t["http"], t["sleep"]} {
		if v != nil {
			given = append(given, v)
		}
	}
	switch {
	case len(given) > 1:
		d.errorf(given[1].path, "a hook is one of a command, an http request and a sleep")
	case len(given) == 0 && !isDefaults:
		d.errorf(n.path, "needs a command, an http request or a sleep")
	}
	// Checked once every key is read: timeout may come after sleep.
	if v := t["sleep"]; v != nil && h.Sleep > h.Timeout {
		d.errorf(v.path, "%v is longer than the hook's timeout (%v): raise timeout", h.Sleep, h.Timeout)
	}
	return h
}

// httpHookKeys are the keys of a hook's http table.
var httpHookKeys = []key[*HTTPHook]{
	{"url", func(d *decoder, h *HTTPHook, v *node) { h.URL = d.httpURL(v) }},
	{"method", func(d *decoder, h *HTTPHook, v *node) {
		if s, ok := d.str(v); ok {
			m := strings.ToUpper(s)
			if !slices.Contains([]string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}, m) {
				d.errorf(v.path, "must be an HTTP method like GET or POST (got %q)", s)
			}
			h.Method = m
		}
	}},
	{"headers", func(d *decoder, h *HTTPHook, v *node) {
		h.Headers = d.headers(v, `a table like { Authorization = "Bearer …" }`)
	}},
	{"expect_status", func(d *decoder, h *HTTPHook, v *node) {
		if i, ok := d.integer(v, 100, 599); ok {
			h.ExpectStatus = int(i)
		}
	}},
}

// httpHook reads a URL string, or a table with url, method, headers and
// expect_status.
func (d *decoder) httpHook(n *node) *HTTPHook {
	h := &HTTPHook{Method: "GET"}
	switch t := n.v.(type) {
	case map[string]*node:
		decodeKeys(d, t, h, httpHookKeys)
		if t["url"] == nil {
			d.errorf(n.path, "needs a url")
		}
	case string:
		h.URL = d.httpURL(n)
	default:
		d.errorf(n.path, "must be a URL or a table with url, method, headers, expect_status (got %s)", describe(n.v))
	}
	return h
}

// headers decodes a table of HTTP headers (of a hook or a probe); example
// shows the expected form in the error.
func (d *decoder) headers(v *node, example string) map[string]string {
	ht := d.table(v, example)
	if ht == nil {
		return nil
	}
	h := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(ht)) {
		hv := ht[k]
		if s, ok := d.str(hv); ok {
			if k == "" || strings.ContainsAny(k, " :\r\n") || strings.ContainsAny(s, "\r\n") {
				d.errorf(hv.path, "invalid header")
				continue
			}
			h[k] = s
		}
	}
	return h
}

// httpURL decodes an absolute http:// or https:// URL.
func (d *decoder) httpURL(n *node) string {
	s, ok := d.str(n)
	if !ok {
		return ""
	}
	if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		d.errorf(n.path, "%q is not an http:// or https:// URL", s)
	}
	return s
}
