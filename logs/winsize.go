package logs

// WinSize is a terminal's size in character cells.
type WinSize struct{ Rows, Cols uint16 }

// minPtyCols is the fewest columns PtySize gives a program when the
// prefix takes nearly all of a narrow terminal: fewer would make most
// programs' tables and progress bars useless, and the lines wrap anyway.
const minPtyCols = 20

// PtySize is the size a program's pseudo-terminal gets: that of the
// terminal the console writes to, less the columns the console puts
// before each line (the time with Timestamps, the padded name and " | "),
// so that a program filling its width fills the line, prefix included,
// and does not wrap. The rows are the terminal's. ok is false when the
// console is not on a terminal or the terminal has no size (a fresh
// pseudo-terminal nobody sized).
func (c *Console) PtySize() (ws WinSize, ok bool) {
	ws, ok = terminalSize(c.w)
	if !ok || ws.Rows == 0 || ws.Cols == 0 {
		return WinSize{}, false
	}
	c.mu.Lock()
	used := c.width + len(" | ")
	if c.timestamps {
		used += len("15:04:05 ")
	}
	c.mu.Unlock()
	cols := max(int(ws.Cols)-used, min(minPtyCols, int(ws.Cols)))
	ws.Cols = uint16(cols)
	return ws, true
}
