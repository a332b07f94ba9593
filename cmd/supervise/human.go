package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/supervise-dev/supervise/logs"
)

// humanHandler is the dev runner's own voice on the console: a few short
// lines among the programs' output, aligned with their prefixes, as
// foreman speaks ("web | started (pid 4352)", "supervise | stopping
// all"), instead of structured records. What it leaves out (each state
// change, hooks) stays in `supervisectl events`; --log-format text or json
// brings the full records back.
type humanHandler struct {
	w          io.Writer // one Write per line
	width      int       // of the program names, for the column
	timestamps bool
	now        func() time.Time
	attrs      []slog.Attr
}

func newHumanHandler(w io.Writer, names []string, timestamps bool) *humanHandler {
	h := &humanHandler{w: w, timestamps: timestamps, now: time.Now}
	for _, n := range names {
		h.width = max(h.width, len(n))
	}
	return h
}

func (h *humanHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

func (h *humanHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), as...)
	return &c
}

func (h *humanHandler) WithGroup(string) slog.Handler { return h }

func (h *humanHandler) Handle(_ context.Context, r slog.Record) error {
	a := map[string]string{}
	var rest []string // the attributes a warning shows
	add := func(x slog.Attr) {
		v := x.Value.Resolve().String()
		a[x.Key] = v
		if x.Key != "program" {
			rest = append(rest, x.Key+"="+quoteIfNeeded(v))
		}
	}
	for _, x := range h.attrs {
		add(x)
	}
	r.Attrs(func(x slog.Attr) bool { add(x); return true })

	name, text := humanText(r, a, rest)
	if text == "" {
		return nil
	}
	var b strings.Builder
	if h.timestamps {
		b.WriteString(h.now().Format("15:04:05 "))
	}
	b.WriteString(name)
	for range h.width - len(name) {
		b.WriteByte(' ')
	}
	b.WriteString(" | ")
	// Attribute values can carry bytes a program chose (a probe's output,
	// a file name): written escaped, they never drive the terminal.
	line := logs.AppendTerminalSafe([]byte(b.String()), text, false)
	_, err := h.w.Write(append(line, '\n'))
	return err
}

// humanText is the line said of r, whose attributes are a (rest: those a
// warning shows), and whose name it bears: the program's, else
// supervise's. text is "" for a record not said.
func humanText(r slog.Record, a map[string]string, rest []string) (name, text string) {
	name = cmp.Or(a["program"], "supervise")
	switch r.Message {
	case "started":
		return name, "started (pid " + a["pid"] + ")"
	case "exited":
		return name, exitText(a)
	case "state":
		return name, stateText(a)
	case "supervise running":
		if a["after_upgrade"] == "true" {
			return name, "" // the upgrade's own line said it
		}
		n := a["programs"] + " programs"
		if n == "1 programs" {
			n = "1 program"
		}
		return "supervise", fmt.Sprintf("running %s from %s; supervisectl in this folder talks to it", n, a["config"])
	case "upgrading: executing the new binary":
		return "supervise", "upgrading in place: executing the new binary " + a["path"]
	case "upgraded in place":
		return "supervise", fmt.Sprintf("upgraded in place from %s to %s (pid %s); every program kept", a["from"], a["to"], a["pid"])
	case "exit_on program ended; stopping everything":
		return "supervise", a["program"] + " ended; stopping all"
	case "stopping everything":
		return "supervise", "stopping all (Ctrl-C again to kill)"
	case "second signal: killing everything":
		return "supervise", "killing all"
	case "supervise exiting":
		return "supervise", "exiting with code " + a["code"]
	case "files changed; restarting", "files changed; signalling", "config reloaded", "config changed; reloading":
		text = r.Message // said as it is, by the program it concerns or by supervise
		if f := a["file"]; f != "" && strings.HasPrefix(r.Message, "files changed") {
			text = strings.Replace(text, "files changed", "files changed ("+filepath.Base(f)+")", 1)
		}
		return name, text
	}
	if r.Level < slog.LevelWarn {
		return name, ""
	}
	text = strings.ToLower(r.Level.String()) + ": " + r.Message
	if len(rest) > 0 {
		text += " (" + strings.Join(rest, " ") + ")"
	}
	return name, text
}

// stateText says the states a dev runner's user cares about; "" for the
// others.
func stateText(a map[string]string) string {
	switch a["to"] {
	case "CrashLoopBackOff":
		return "restarting after a " + strings.TrimPrefix(a["msg"], "back-off ") + " back-off (CrashLoopBackOff)"
	case "Failed":
		return "failed; not restarted"
	case "Waiting":
		return "waiting: " + a["msg"]
	}
	return ""
}

// exitText says how a run ended, as foreman does: "exited with code 3",
// "killed by signal KILL", and the reason when it is supervise's own.
func exitText(a map[string]string) string {
	var s string
	if sig := a["signal"]; sig != "" && sig != "0" {
		s = "killed by signal " + sig
	} else {
		s = "exited with code " + a["exit_code"]
	}
	switch r := a["reason"]; r {
	case "", "Completed", "Error", "Signaled":
	default:
		s += " (" + r + ")"
	}
	return s
}

func quoteIfNeeded(s string) string {
	if s == "" || strings.ContainsAny(s, " \t\"=") {
		return fmt.Sprintf("%q", s)
	}
	return s
}
