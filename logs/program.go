package logs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// Output is where one stream of a program goes.
type Output struct {
	// Console copies the stream's lines to the program's Console.
	Console bool
	// File appends them to a rotating file; File.Path "" means no file.
	// Two streams naming the same path share one File.
	File FileConfig
}

// ProgramConfig configures a Program. Zero fields get defaults.
type ProgramConfig struct {
	// Name is the program (or instance) name every line carries.
	Name string
	// Console is the shared console, nil for none. Program adds Name to it
	// and flushes it, but never closes it.
	Console *Console
	// Ring keeps the program's last lines; nil for none. It belongs to the
	// caller so that it can outlive this Program (a reload that changes
	// the outputs makes a new Program with the same Ring). Every stream
	// goes to it.
	Ring *Ring
	// Stdout and Stderr say where each stream goes. Any other stream name
	// (a hook's) goes where Stdout goes.
	Stdout, Stderr Output
	// MaxLineLength, Now and Logger are passed to the pumps.
	MaxLineLength int
	Now           func() time.Time
	Logger        *slog.Logger
	// Files, when set, shares each file with every other Program of the
	// same Files writing to its path; nil opens the files for this
	// Program alone.
	Files *Files
	// PipeSize, when positive, asks the kernel for a pipe buffer of this
	// many bytes (best effort); 0 keeps the kernel's default, 64 KiB on
	// Linux. A bigger pipe lets a program run further ahead of its pump,
	// but BenchmarkPipe showed no clear gain, and pipe memory is limited per user
	// (/proc/sys/fs/pipe-user-pages-soft), so it is not the default.
	PipeSize int
}

// Program routes the output of one program's processes to its sinks. It
// makes a pipe per stream for each process run and pumps the read end into
// the sinks; the supervisor gives the write ends to the process and closes
// its copies once the process has started. A pump drains its pipe to end of
// file, when the process and all its children have closed it, so lines
// written just before an exit, or by a child outliving the process, are
// never lost across a restart. The files belong to the Program and close
// with it; the console and the ring do not.
type Program struct {
	cfg            ProgramConfig
	stdout, stderr Sink
	files          []*File

	mu     sync.Mutex
	pipes  map[*Pump]*os.File // read ends of running pumps; guarded by mu
	closed bool               // guarded by mu
	wg     sync.WaitGroup     // pump goroutines
}

// NewProgram opens the program's files and returns its router.
func NewProgram(cfg ProgramConfig) (_ *Program, retErr error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	p := &Program{cfg: cfg, pipes: make(map[*Pump]*os.File)}
	defer func() {
		if retErr != nil {
			for _, f := range p.files {
				p.closeFile(f)
			}
		}
	}()
	byPath := make(map[string]*File)
	sink := func(o Output) (Sink, error) {
		var file Sink
		if o.File.Path != "" {
			f, ok := byPath[o.File.Path]
			if !ok {
				var err error
				if o.File.Logger == nil {
					o.File.Logger = cfg.Logger.With("program", cfg.Name)
				}
				if cfg.Files != nil {
					f, err = cfg.Files.open(o.File)
				} else {
					f, err = OpenFile(o.File)
				}
				if err != nil {
					return nil, fmt.Errorf("logs of %q: %w", cfg.Name, err)
				}
				byPath[o.File.Path] = f
				p.files = append(p.files, f)
			}
			file = f
		}
		var console Sink
		if o.Console && cfg.Console != nil {
			console = cfg.Console
		}
		var ring Sink
		if cfg.Ring != nil {
			ring = cfg.Ring
		}
		// The ring last: a follower never sees a line before the console and
		// the file have taken it.
		return Multi(console, file, ring), nil
	}
	var err error
	if p.stdout, err = sink(cfg.Stdout); err != nil {
		return nil, err
	}
	if p.stderr, err = sink(cfg.Stderr); err != nil {
		return nil, err
	}
	if cfg.Console != nil && (cfg.Stdout.Console || cfg.Stderr.Console) {
		cfg.Console.Add(cfg.Name)
	}
	return p, nil
}

// Name returns the program's name.
func (p *Program) Name() string { return p.cfg.Name }

// Sink returns where lines of the stream go.
func (p *Program) Sink(stream string) Sink {
	if stream == Stderr {
		return p.stderr
	}
	return p.stdout
}

func (p *Program) pumpConfig(stream string) PumpConfig {
	return PumpConfig{
		Program:       p.cfg.Name,
		Stream:        stream,
		MaxLineLength: p.cfg.MaxLineLength,
		Now:           p.cfg.Now,
		Logger:        p.cfg.Logger,
	}
}

// NewPipe makes a pipe for one stream of a process about to start, starts
// a pump on its read end and returns the write end for the process. The
// caller closes the write end once the process has started (or failed to).
func (p *Program) NewPipe(stream string) (*os.File, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, fmt.Errorf("logs of %q: pipe for %s: %w", p.cfg.Name, stream, ErrClosed)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("logs of %q: pipe for %s: %w", p.cfg.Name, stream, err)
	}
	if p.cfg.PipeSize > 0 {
		setPipeSize(w, p.cfg.PipeSize)
	}
	p.startPumpLocked(stream, r, w, false)
	return w, nil
}

// NewPty is NewPipe with a pseudo-terminal in place of the pipe: the
// program sees a terminal (and prints its colours), and whatever it
// writes to the returned slave, on stdout and stderr alike, is read in
// the order written. The lines go where stream's go.
func (p *Program) NewPty(stream string) (*os.File, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, fmt.Errorf("logs of %q: terminal for %s: %w", p.cfg.Name, stream, ErrClosed)
	}
	// It starts at the console's current size: a restarted program sees
	// the size the terminal has now, not the one it had at our start.
	var ws *WinSize
	if p.cfg.Console != nil {
		if size, ok := p.cfg.Console.PtySize(); ok {
			ws = &size
		}
	}
	m, s, err := openPty(ws)
	if err != nil {
		return nil, fmt.Errorf("logs of %q: %w", p.cfg.Name, err)
	}
	p.startPumpLocked(stream, m, s, true)
	return s, nil
}

// Resize gives every pseudo-terminal of p (NewPty's, and any adopted)
// the size ws. The kernel sends SIGWINCH to a terminal's foreground
// process group, but a program's terminal is nobody's controlling one
// (the program did not open it, it got it as its stdout): Resize reports
// whether it changed the size of such a terminal, whose program the
// caller must then signal itself. A master that refuses is left as it
// is: its program still runs, only at its old size.
func (p *Program) Resize(ws WinSize) (signal bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for pump, r := range p.pipes {
		if !pump.tty {
			continue
		}
		changed, told, err := resizePty(r, ws)
		if err != nil {
			p.cfg.Logger.Debug("resizing a program's terminal", "program", p.cfg.Name, "err", err)
		}
		signal = signal || changed && !told
	}
	return signal
}

// startPumpLocked pumps r, the read end of w, into stream's sinks; tty
// says r is a pseudo-terminal's master.
func (p *Program) startPumpLocked(stream string, r, w *os.File, tty bool) {
	// os.Pipe leaves both ends non-blocking for the poller; a child must
	// get a blocking stdout. Fd switches the write end back (os/exec would
	// too, but not every way of starting a process goes through it).
	w.Fd()
	pump := newPump(r, p.Sink(stream), p.pumpConfig(stream))
	pump.after = p.afterPump(pump, r)
	pump.tty = tty
	p.pipes[pump] = r
	p.wg.Go(pump.run)
}

// afterPump forgets pump once it ended, and closes its pipe unless the
// pump was detached for a hand-over (the pipe then lives on).
func (p *Program) afterPump(pump *Pump, r *os.File) func() {
	return func() {
		p.mu.Lock()
		delete(p.pipes, pump)
		p.mu.Unlock()
		if !pump.detached {
			r.Close()
		}
	}
}

// Wait blocks until every pipe made so far has been read to its end, or
// until ctx ends (then it returns ctx's error). A supervisor calls it after
// a process exited and before starting the next, with a short deadline,
// so that the old run's last lines come before the new run's first ones;
// a child still holding the old pipe must not delay the restart for long.
func (p *Program) Wait(ctx context.Context) error {
	p.mu.Lock()
	pumps := make([]*Pump, 0, len(p.pipes))
	for pump := range p.pipes {
		pumps = append(pumps, pump)
	}
	p.mu.Unlock()
	for _, pump := range pumps {
		select {
		case <-pump.Finished():
		case <-ctx.Done():
			return fmt.Errorf("logs of %q: waiting for pipes to drain: %w", p.cfg.Name, ctx.Err())
		}
	}
	return nil
}

// Writer returns a writer whose lines are logged as the stream's; hooks'
// output goes through it. Close it when the output ends.
func (p *Program) Writer(stream string) *LineWriter {
	return NewLineWriter(p.Sink(stream), p.pumpConfig(stream))
}

// Reopen reopens the program's files (after an outside rotation).
func (p *Program) Reopen() error {
	var errs []error
	for _, f := range p.files {
		errs = append(errs, f.Reopen())
	}
	return errors.Join(errs...)
}

// Close refuses new pipes and waits for the pumps to drain their pipes.
// When ctx ends first (a process left a child holding a pipe open), it
// closes the remaining read ends, which ends their pumps at once, and
// returns ctx's error. Then it flushes the console and closes the files.
func (p *Program) Close(ctx context.Context) error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()

	drained := make(chan struct{})
	go func() {
		p.wg.Wait()
		close(drained)
	}()
	var errs []error
	select {
	case <-drained:
	case <-ctx.Done():
		p.mu.Lock()
		for pump, r := range p.pipes {
			r.Close()
			delete(p.pipes, pump)
		}
		p.mu.Unlock()
		<-drained
		errs = append(errs, fmt.Errorf("logs of %q: pipes still open: %w", p.cfg.Name, ctx.Err()))
	}
	if p.cfg.Console != nil {
		errs = append(errs, p.cfg.Console.Flush())
	}
	for _, f := range p.files {
		errs = append(errs, p.closeFile(f))
	}
	return errors.Join(errs...)
}

func (p *Program) closeFile(f *File) error {
	if p.cfg.Files != nil {
		return p.cfg.Files.release(f)
	}
	return f.Close()
}
