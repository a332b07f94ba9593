package supervisor

import (
	"context"
	"fmt"
	"os"

	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/notify"
)

// The readiness notification channels across an upgrade in place: the
// sd_notify socket or the notify fd's pipe is detached between two
// messages and crosses the exec (what the program sends meanwhile waits
// in it for the new binary), with what the program said and the
// watchdog's deadline.

// NotifyHandover is an instance's notification channel: the descriptor of
// its sd_notify socket with the path the program has in NOTIFY_SOCKET, or
// the read end of its notify fd's pipe (none once every writer closed it);
// whether it said READY=1 (or wrote its newline), its STATUS=, and its
// watchdog.
type NotifyHandover struct {
	SocketFD   int                   `json:"socket_fd,omitempty"`
	SocketPath string                `json:"socket_path,omitempty"`
	PipeFD     int                   `json:"pipe_fd,omitempty"`
	Ready      bool                  `json:"ready,omitempty"`
	Status     string                `json:"status,omitempty"`
	Watchdog   *notify.WatchdogState `json:"watchdog,omitempty"`
}

// maxStatus bounds a handed over STATUS=: a datagram holds no more.
const maxStatus = 4096

// freezeNotify stops reading in's notification channel h once every
// message read is taken into h, and says it for the hand-over: the files
// are the descriptors it names. undo, never nil, reads again when the exec
// does not happen.
func (s *Supervisor) freezeNotify(ctx context.Context, in *instance, h *health) (*NotifyHandover, []*os.File, func(), error) {
	nh := &NotifyHandover{}
	var files []*os.File
	var undos []func()
	undo := func() {
		for i := len(undos) - 1; i >= 0; i-- {
			undos[i]()
		}
	}
	fdReady := false
	if h.sock != nil {
		s.mu.Lock()
		done := h.notifyDone
		s.mu.Unlock()
		f, err := h.sock.Detach(ctx)
		undos = append(undos, func() {
			// The reader returns once its consumer has taken what it
			// read; then both start again, in that order.
			<-done
			h.sock.Resume()
			s.mu.Lock()
			s.followNotifySocket(in, h, in.sandboxID)
			s.mu.Unlock()
		})
		if err != nil {
			return nil, nil, undo, err
		}
		undos = append(undos, func() { f.Close() })
		// The consumer ends when the socket's messages are all taken:
		// READY=1 and pings read before the exec are in h.
		select {
		case <-done:
		case <-ctx.Done():
			return nil, nil, undo, fmt.Errorf("program %s: taking its last sd_notify messages: %w", in.key, ctx.Err())
		}
		fd, err := rawFD(f)
		if err != nil {
			return nil, nil, undo, err
		}
		nh.SocketFD, nh.SocketPath = fd, h.sock.Path()
		files = append(files, f)
	}
	if h.fd != nil {
		f, ready, err := h.fd.Detach(ctx)
		undos = append(undos, h.fd.Resume)
		if err != nil {
			return nil, nil, undo, fmt.Errorf("program %s: %w", in.key, err)
		}
		if f != nil {
			fd, err := rawFD(f)
			if err != nil {
				return nil, nil, undo, err
			}
			nh.PipeFD = fd
			files = append(files, f)
		}
		fdReady = ready
	}
	s.mu.Lock()
	nh.Ready = h.notifyReady || fdReady
	nh.Status = h.status
	s.mu.Unlock()
	if h.watchdog != nil {
		// Taken last: the pings read are counted; one sent from now on
		// waits in the socket for the new binary.
		ws := h.watchdog.State()
		nh.Watchdog = &ws
	}
	return nh, files, undo, nil
}

// checkNotifyHandover checks an instance's notification channel against
// the program's config: only the channel its notify asks for, passed and
// bounded; an sd_notify socket always (the program's NOTIFY_SOCKET names
// it), with its watchdog when it has one.
func checkNotifyHandover(ih *InstanceHandover, spec *config.Program, fds map[int]*os.File) error {
	n := ih.Notify
	running := ih.ProcID != "" && ih.State == Running
	wantSock := running && spec.Notify == config.NotifySdNotify
	switch {
	case n == nil && wantSock:
		return fmt.Errorf("instance %s: its sd_notify socket was not handed over", ih.Key)
	case n == nil:
		return nil
	case !running:
		return fmt.Errorf("instance %s: a notification channel without a running process", ih.Key)
	case (n.SocketFD != 0) != wantSock || n.PipeFD != 0 && spec.Notify != config.NotifyFD:
		return fmt.Errorf("instance %s: a notification channel its notify = %q does not make", ih.Key, spec.Notify)
	case len(n.Status) > maxStatus:
		return fmt.Errorf("instance %s: a STATUS= of %d bytes", ih.Key, len(n.Status))
	case (n.Watchdog != nil) != (wantSock && spec.Watchdog > 0):
		return fmt.Errorf("instance %s: a watchdog its config does not have, or none for the one it has", ih.Key)
	case n.Watchdog != nil && (n.Watchdog.Timeout < 0 || n.Watchdog.Left < 0 || n.Watchdog.Left > n.Watchdog.Timeout):
		return fmt.Errorf("instance %s: watchdog %s with %s left", ih.Key, n.Watchdog.Timeout, n.Watchdog.Left)
	}
	for _, fd := range []int{n.SocketFD, n.PipeFD} {
		if fd != 0 && fds[fd] == nil {
			return fmt.Errorf("instance %s: notification descriptor %d was not passed", ih.Key, fd)
		}
	}
	return nil
}

// adoptNotifySockets takes over the instances' sd_notify sockets, checked
// (see notify.AdoptSocket) and not yet read: all or none, before anything
// else is adopted. The descriptors stay in fds, for a fall-back to the old
// binary until the take-over is done (the sockets have their own).
func (s *Supervisor) adoptNotifySocketsLocked(h *Handover, fds map[int]*os.File) (map[string]*notify.Socket, error) {
	socks := map[string]*notify.Socket{}
	for _, ih := range h.Instances {
		if s.instances[ih.Key] == nil || ih.Notify == nil || ih.Notify.SocketFD == 0 {
			continue
		}
		sock, err := notify.AdoptSocket(notify.DefaultBase(), ih.Notify.SocketPath, fds[ih.Notify.SocketFD])
		if err != nil {
			for _, sk := range socks {
				sk.Release()
			}
			return nil, fmt.Errorf("instance %s: %w", ih.Key, err)
		}
		socks[ih.Key] = sock
	}
	return socks, nil
}

// adoptNotify gives an adopted run's health what the program said and its
// notification channel back, read again from now on.
func adoptNotify(hl *health, n *NotifyHandover, sock *notify.Socket, pipe *os.File) {
	if n == nil {
		return
	}
	hl.notifyReady, hl.status, hl.adoptedWatchdog = n.Ready, n.Status, n.Watchdog
	if sock != nil {
		sock.Resume()
		hl.sock = sock
	}
	if pipe != nil {
		hl.fd = notify.AdoptFD(pipe, n.Ready)
	}
}
