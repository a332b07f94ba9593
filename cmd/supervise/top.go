package main

import (
	"context"
	"errors"
	"os"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/supervise-dev/supervise/ctl"
	"github.com/supervise-dev/supervise/ctl/ctlfmt"
)

// ctlTop is `supervisectl top`: the status, refreshed every interval on
// the terminal's alternate screen, sorted by CPU, memory or name, with the
// why line of the selected instance (j/k or the arrows move it); q quits
// (as do ^C and the end of input).
func ctlTop(ctx context.Context, e *ctlEnv) error {
	in, out := int(os.Stdin.Fd()), os.Stdout
	if e.json || !isTerminal(out) || !isTerminal(os.Stdin) {
		return usagef("top needs a terminal on its input and output (status --json is for scripts)")
	}
	restore, err := cbreak(in)
	if err != nil {
		return err
	}
	defer restore()
	// The alternate screen, without a cursor; both given back on the way
	// out, whatever ends the view.
	out.WriteString("\x1b[?1049h\x1b[?25l")
	defer out.WriteString("\x1b[?25h\x1b[?1049l")

	view := &ctlfmt.Top{Sort: e.sort}
	draw := func() error { return topFrame(ctx, e, view, out) }
	if err := draw(); err != nil {
		return err
	}
	next := time.Now().Add(e.interval)
	buf := make([]byte, 64)
	for {
		if ctx.Err() != nil {
			return nil // ^C ends top as q does
		}
		// Short polls: a signal, a resize or the next frame is never
		// more than 100ms away.
		wait := min(time.Until(next), 100*time.Millisecond)
		fds := []unix.PollFd{{Fd: int32(in), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(max(wait, 0)/time.Millisecond))
		if err != nil && !errors.Is(err, unix.EINTR) {
			return err
		}
		if n > 0 {
			k, err := unix.Read(in, buf)
			if k <= 0 || err != nil {
				return nil // the terminal went away
			}
			quit, redraw := topKeys(view, buf[:k])
			if quit {
				return nil
			}
			if !redraw {
				continue
			}
		} else if time.Now().Before(next) {
			continue
		}
		if err := draw(); err != nil {
			return err
		}
		next = time.Now().Add(e.interval)
	}
}

// topFrame draws one frame of view, the size of the terminal out.
func topFrame(ctx context.Context, e *ctlEnv, view *ctlfmt.Top, out *os.File) error {
	st, err := e.client.Status(ctx, e.names)
	if err != nil {
		return err
	}
	// The why line of the selected instance (the first until one is
	// chosen); a supervisor too old for why just leaves it out.
	sel := view.Selected
	if !slices.ContainsFunc(st, func(p ctl.ProgramStatus) bool { return p.Name == sel }) && len(st) > 0 {
		sel = st[0].Name
	}
	view.Why = nil
	if sel != "" {
		if ws, err := e.client.Why(ctx, []string{sel}); err == nil && len(ws) == 1 {
			view.Why = &ws[0]
		}
	}
	w, h := 80, 24
	if ws, err := unix.IoctlGetWinsize(int(out.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 && ws.Row > 0 {
		w, h = int(ws.Col), int(ws.Row)
	}
	return view.Frame(out, st, time.Now(), w, h, e.colour)
}

// topKeys acts on the keys pressed: q (or ^D) quits; c, m and n sort by
// CPU, memory or name; j/k and the arrows move the selection whose why
// line is shown. Each but q needs a redraw.
func topKeys(view *ctlfmt.Top, keys []byte) (quit, redraw bool) {
	for i := 0; i < len(keys); i++ {
		c := keys[i]
		// The arrow keys: ESC [ A (up) and ESC [ B (down).
		if c == 0x1b && i+2 < len(keys) && keys[i+1] == '[' {
			switch keys[i+2] {
			case 'A':
				view.Move(-1)
				redraw = true
			case 'B':
				view.Move(1)
				redraw = true
			}
			i += 2
			continue
		}
		switch c {
		case 'k', 'K':
			view.Move(-1)
			redraw = true
		case 'j', 'J':
			view.Move(1)
			redraw = true
		case 'q', 'Q', 4: // 4: ^D
			return true, redraw
		case 'c', 'C':
			view.Sort, redraw = ctlfmt.SortCPU, true
		case 'm', 'M':
			view.Sort, redraw = ctlfmt.SortMemory, true
		case 'n', 'N':
			view.Sort, redraw = ctlfmt.SortName, true
		}
	}
	return false, redraw
}

// cbreak turns off the terminal's line editing and echo, so that a key
// arrives as it is pressed; ^C still signals. restore gives the terminal
// back as it was.
func cbreak(fd int) (restore func(), err error) {
	old, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
	if err != nil {
		return nil, err
	}
	t := *old
	t.Lflag &^= unix.ICANON | unix.ECHO
	t.Cc[unix.VMIN], t.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, ioctlSetTermios, &t); err != nil {
		return nil, err
	}
	return func() { _ = unix.IoctlSetTermios(fd, ioctlSetTermios, old) }, nil
}
