package logs

import (
	"bytes"
	"unicode/utf8"
)

// DefaultMaxLineLength is where a line is cut when no other length is set.
const DefaultMaxLineLength = 64 << 10

// minRead is the least free space the splitter offers a Read: reading a
// pipe in small pieces costs a system call per piece. A writer that fills
// every read gets up to maxRead, more than a pipe holds (64 KiB unless
// enlarged), so that one read takes whatever the pipe has: as supervisord
// reads 128 KiB at a time.
const (
	minRead = 32 << 10
	maxRead = 128 << 10
)

// splitter cuts a byte stream into lines of at most maxLen bytes. It owns
// one buffer for its whole life: data is read into it in place and lines
// are handed to emit as slices of it, valid only during the call.
//
// The result depends only on the bytes, never on how they were split
// across reads: a line is cut only once more than maxLen bytes of it are
// known, so a line of exactly maxLen bytes is never cut.
type splitter struct {
	buf        []byte
	start, end int // buf[start:end] is data not yet emitted
	maxLen     int
	limit      int  // the most buf grows to
	lastFree   int  // size of the space free() last returned
	readFull   bool // the last read filled that space: a fast writer
	emit       func(text []byte, partial bool)
	// chunk, when set, takes runs of complete lines (each with its
	// newline, none too long) in one call; emit still gets the rest.
	chunk func(lines []byte)
}

// initialBuffer is where a splitter's buffer starts: a quiet program (most
// of them) never needs more, and a thousand programs must not cost a
// thousand maximum-size buffers (two pumps a program: at 4 KiB, 1,000 idle
// programs held 2.5 MiB more). It grows, up to the maximum line length
// plus a read, when a line or a fast writer needs it: one read that fills
// it is enough.
const initialBuffer = 512

func newSplitter(maxLen int, emit func([]byte, bool)) *splitter {
	if maxLen <= 0 {
		maxLen = DefaultMaxLineLength
	}
	// Room for a pending line of maxLen bytes, the byte that proves it is
	// longer, and a full read after it.
	limit := maxLen + 1 + maxRead
	return &splitter{buf: make([]byte, min(initialBuffer, limit)), maxLen: maxLen, limit: limit, emit: emit}
}

// free returns the space the next read fills, compacting first when the
// space left at the end is short, and growing the buffer when it is full
// (a long line) or when the writer fills every read (throughput).
func (s *splitter) free() []byte {
	want := minRead
	if s.readFull {
		want = maxRead
	}
	if len(s.buf)-s.end < want {
		if s.start > 0 {
			s.end = copy(s.buf, s.buf[s.start:s.end])
			s.start = 0
		}
		if len(s.buf)-s.end < want && len(s.buf) < s.limit && (s.end == len(s.buf) || s.readFull) {
			nb := make([]byte, min(s.limit, max(2*len(s.buf), s.end+want)))
			copy(nb, s.buf[:s.end])
			s.buf = nb
		}
	}
	s.lastFree = len(s.buf) - s.end
	return s.buf[s.end:]
}

// advance accounts for n bytes read into free() and emits every line that
// is now complete, and chunks of lines that are now known to be too long.
func (s *splitter) advance(n int) {
	s.readFull = n > 0 && n == s.lastFree
	s.end += n
	if s.chunk != nil {
		data := s.buf[s.start:s.end]
		if last := bytes.LastIndexByte(data, '\n'); last >= 0 {
			s.chunks(data[:last+1])
			s.start += last + 1
		}
	}
	for {
		data := s.buf[s.start:s.end]
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		s.line(data[:i], false)
		s.start += i + 1
	}
	for s.end-s.start > s.maxLen {
		k := s.cut(s.buf[s.start:s.end])
		s.emit(s.buf[s.start:s.start+k], true)
		s.start += k
	}
	if s.start == s.end {
		s.start, s.end = 0, 0
	}
}

// chunks hands b, complete lines, to chunk in runs; a line longer than
// maxLen is cut by line between them. Only such a line needs finding, and
// a window of maxLen+1 bytes that holds a newline ends none: the scan
// jumps from the last newline of one window to the next, so a fast
// writer's short lines are not looked at one by one.
func (s *splitter) chunks(b []byte) {
	run := 0
	for i := 0; len(b)-i > s.maxLen+1; {
		if j := bytes.LastIndexByte(b[i:i+s.maxLen+1], '\n'); j >= 0 {
			i += j + 1
			continue
		}
		// The line at i is too long; b ends with a newline, so it ends.
		j := s.maxLen + 1 + bytes.IndexByte(b[i+s.maxLen+1:], '\n')
		if i > run {
			s.chunk(b[run:i])
		}
		s.line(b[i:i+j], false)
		i += j + 1
		run = i
	}
	if run < len(b) {
		s.chunk(b[run:])
	}
}

// write feeds p through the buffer, for writers that are handed data
// rather than reading it.
func (s *splitter) write(p []byte) {
	for len(p) > 0 {
		n := copy(s.free(), p)
		s.advance(n)
		p = p[n:]
	}
}

// finish emits what is left as a last, partial line.
func (s *splitter) finish() {
	if s.end > s.start {
		s.line(s.buf[s.start:s.end], true)
	}
	s.start, s.end = 0, 0
}

// line emits a whole line, in chunks when it is too long; every chunk but
// the last is partial, the last is partial when the line had no newline.
func (s *splitter) line(b []byte, partial bool) {
	for len(b) > s.maxLen {
		k := s.cut(b)
		s.emit(b[:k], true)
		b = b[k:]
	}
	s.emit(b, partial)
}

// cut returns where to cut b (longer than maxLen): at maxLen, moved back to
// the start of a UTF-8 sequence when that keeps the chunk non-empty, so
// that valid UTF-8 stays valid in every chunk.
func (s *splitter) cut(b []byte) int {
	k := s.maxLen
	for j := k; j > 0 && j > k-utf8.UTFMax; j-- {
		if utf8.RuneStart(b[j]) {
			return j
		}
	}
	return k
}
