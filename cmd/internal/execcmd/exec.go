// Package execcmd is the exec init's command line: its flags, read once
// for `supervise exec` and for the small supervise-init binary, and the
// init's configuration from them.
package execcmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/supervise-dev/supervise/backoff"
	"github.com/supervise-dev/supervise/internal/size"
	"github.com/supervise-dev/supervise/internal/unixsig"
	"github.com/supervise-dev/supervise/pid1"
	"github.com/supervise-dev/supervise/proc"
)

// Options are the flags and arguments of the exec init.
type Options struct {
	singleChild                              bool
	rewrite                                  []string
	successExitCodes                         []int
	grace                                    time.Duration
	stopSignal                               string
	restart                                  string
	backoffInitial, backoffMax, backoffReset time.Duration
	memoryMax                                string
	pidsMax                                  int64
	ns                                       []string
	preserveFDs, listenFDs                   int64
	verbose                                  bool
	// Args are the command and its arguments.
	Args []string
}

// Description is what help says of the exec init.
const Description = `Runs CMD in its own process group and forwards every signal sent to it
(SIGPIPE, SIGURG and SIGPROF included) to that group (--single-child: to CMD
alone). CMD takes the terminal over when stdin is supervise's controlling
terminal; when supervise has one CMD does not get, CMD runs in a new session,
cut off from it. It reaps every zombie (as PID 1, or as a child subreaper
otherwise) and exits with CMD's exit code, or 128+N when signal N killed it;
127 when CMD is not found, 126 when it cannot be run. When CMD exits, what it
left behind gets --stop-signal, then SIGKILL after --grace; supervise exits
as soon as the last of it is gone. With --single-child, as dumb-init's, the
rest is left alone and supervise exits at once (as PID 1, the kernel ends
what is left with the pid namespace). Inherited descriptors beyond stdio are
closed for CMD but those of socket activation ($LISTEN_FDS) and
--preserve-fds.`

// Main runs the exec init for args (those after "exec"); again are the
// arguments that run this same init when this binary is started with
// them ("exec" for supervise, none for supervise-init), for the init
// inside a sandbox. ok is false when the
// caller must handle args instead (help, a flag or value ParseArgs
// rejects, shell completion) and print what the user expects for those.
func Main(args []string, again ...string) (code int, ok bool) {
	if n := len(args); n > 0 && args[n-1] == "--generate-bash-completion" {
		return 0, false
	}
	o, ok := ParseArgs(args)
	if !ok {
		return 0, false
	}
	cfg, err := Config(o, again...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "supervise:", err)
		return ExitUsage, true
	}
	return Run(cfg), true
}

// Exit codes of the init itself (the command's code passes through).
const (
	ExitUsage  = 2
	ExitFailed = 1
)

// Run runs the init and returns the code to exit with. What we
// inherited beyond stdio and the descriptors to pass is closed at every
// exec: it must not reach CMD (which may drop privileges) nor anything
// it starts.
func Run(cfg pid1.Config) int {
	// Started with signals blocked, CMD would inherit them: this binary
	// runs again with none blocked (the descriptors to pass are not
	// close-on-exec yet, and cross).
	if err := unixsig.StartUnblocked(); err != nil {
		fmt.Fprintln(os.Stderr, "supervise: warning: started with signals blocked, which the command inherits:", err)
	}
	if err := proc.CloseOnExecFrom(3 + cfg.PreserveFDs); err != nil {
		fmt.Fprintln(os.Stderr, "supervise: exec:", err)
		return ExitFailed
	}
	code, err := pid1.Run(context.Background(), cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "supervise:", oneLine(err.Error()))
	}
	return code
}

// Config turns o into the init's configuration; again is as for Main.
func Config(o Options, again ...string) (pid1.Config, error) {
	cfg := pid1.Config{
		Args:             o.Args,
		SingleChild:      o.singleChild,
		SuccessExitCodes: o.successExitCodes,
		Grace:            o.grace,
		Backoff: backoff.CrashConfig{
			Initial: o.backoffInitial, Max: o.backoffMax, ResetAfter: o.backoffReset,
		},
		// Both callers exit with Run's code.
		Dedicated: true,
	}
	if len(cfg.Args) == 0 {
		return cfg, errors.New("exec: no command: supervise exec [flags] -- CMD [ARGS…]")
	}
	var err error
	if cfg.Restart, err = pid1.ParseRestart(o.restart); err != nil {
		return cfg, fmt.Errorf("exec: --%w", err)
	}
	if cfg.StopSignal, err = unixsig.Parse(o.stopSignal); err != nil {
		return cfg, fmt.Errorf("exec: --stop-signal: %w", err)
	}
	if cfg.Grace < 0 {
		return cfg, fmt.Errorf("exec: --grace %v: must not be negative", cfg.Grace)
	}
	if o.preserveFDs < 0 || o.preserveFDs > maxPassedFDs {
		return cfg, fmt.Errorf("exec: --preserve-fds %d: want 0 to %d", o.preserveFDs, maxPassedFDs)
	}
	listen := int(o.listenFDs)
	if listen < 0 {
		if listen, err = pid1.ListenFDs(os.Environ(), os.Getpid()); err != nil {
			return cfg, fmt.Errorf("exec: socket activation: %w", err)
		}
	}
	if listen > maxPassedFDs-int(o.preserveFDs) {
		return cfg, fmt.Errorf("exec: %d socket-activation descriptors and --preserve-fds %d: at most %d in all", listen, o.preserveFDs, maxPassedFDs)
	}
	cfg.ListenFDs, cfg.PreserveFDs = listen, listen+int(o.preserveFDs)
	for _, r := range o.rewrite {
		from, to, err := pid1.ParseRewrite(r)
		if err != nil {
			return cfg, fmt.Errorf("exec: --%w", err)
		}
		if cfg.Rewrite == nil {
			cfg.Rewrite = map[syscall.Signal]syscall.Signal{}
		}
		cfg.Rewrite[from] = to
	}
	level := slog.LevelWarn
	if o.verbose {
		level = slog.LevelDebug
	}
	cfg.Logger = slog.New(&lazyHandler{level: level})

	sb, err := sandbox(o, again, cfg.PreserveFDs, cfg.ListenFDs)
	if err != nil {
		return cfg, err
	}
	cfg.Sandbox = sb
	return cfg, nil
}

// sandbox reads the sandbox flags; nil when none is given. Inside the
// sandbox this binary runs again as a plain exec init (the runtime owns
// the wait4s of this process, so the reaping and the grace-bounded
// cleanup in there is that init's job); it gets the flags that concern
// it, the rewrite and the restart stay out here.
func sandbox(o Options, again []string, preserve, listen int) (*pid1.Sandbox, error) {
	var sb pid1.Sandbox
	if o.memoryMax != "" {
		n, err := size.Parse(o.memoryMax)
		if err != nil {
			return nil, fmt.Errorf("exec: --memory-max: %w", err)
		}
		sb.MemoryMax = n
	}
	if sb.PidsMax = o.pidsMax; sb.PidsMax < 0 {
		return nil, fmt.Errorf("exec: --pids-max %d: must not be negative", sb.PidsMax)
	}
	for _, ns := range o.ns {
		for n := range strings.SplitSeq(ns, ",") {
			if n = strings.TrimSpace(n); n != "" {
				sb.Namespaces = append(sb.Namespaces, proc.Namespace(n))
			}
		}
	}
	if sb.MemoryMax == 0 && sb.PidsMax == 0 && len(sb.Namespaces) == 0 {
		return nil, nil
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("exec: finding our own binary for the init inside the sandbox: %w", err)
	}
	sb.InitArgs = append(append([]string{self}, again...),
		"--grace", o.grace.String(),
		"--stop-signal", strconv.Itoa(int(mustSignal(o.stopSignal))))
	if o.singleChild {
		sb.InitArgs = append(sb.InitArgs, "--single-child")
	}
	if o.verbose {
		sb.InitArgs = append(sb.InitArgs, "--verbose")
	}
	if preserve > 0 {
		// The runtime hands them over at the same numbers; the init in
		// there passes them on (and sets LISTEN_PID for CMD).
		sb.InitArgs = append(sb.InitArgs, "--preserve-fds", strconv.Itoa(preserve-listen), "--listen-fds", strconv.Itoa(listen))
	}
	sb.InitArgs = append(sb.InitArgs, "--")
	return &sb, nil
}

// lazyHandler is the init's log handler: text on stderr, every line
// with init=exec. It builds that handler on the first record at level or
// above: most runs log nothing, and building it was a measurable part of
// the init's start.
type lazyHandler struct {
	level slog.Level
	once  sync.Once
	h     slog.Handler
}

func (l *lazyHandler) Enabled(_ context.Context, lv slog.Level) bool { return lv >= l.level }

func (l *lazyHandler) handler() slog.Handler {
	l.once.Do(func() {
		l.h = slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l.level}).
			WithAttrs([]slog.Attr{slog.String("init", "exec")})
	})
	return l.h
}

func (l *lazyHandler) Handle(ctx context.Context, r slog.Record) error {
	return l.handler().Handle(ctx, r)
}

func (l *lazyHandler) WithAttrs(as []slog.Attr) slog.Handler { return l.handler().WithAttrs(as) }
func (l *lazyHandler) WithGroup(name string) slog.Handler    { return l.handler().WithGroup(name) }

// maxPassedFDs bounds the descriptors exec passes on (3 … 1024, as the
// sandbox runtime's extra files).
const maxPassedFDs = 1022

// mustSignal is for a signal execConfig has already validated.
func mustSignal(s string) syscall.Signal {
	sig, err := unixsig.Parse(s)
	if err != nil {
		return syscall.SIGTERM
	}
	return sig
}

func oneLine(s string) string {
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", "; ")
}
