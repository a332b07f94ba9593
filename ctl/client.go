package ctl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/user"
	"strconv"
	"syscall"
	"time"
)

// UnreachableError means no supervisor answered on the socket: nobody
// listens there, or the connection broke before a reply came.
type UnreachableError struct {
	Socket string
	Err    error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("no supervisor reachable at %s: %v (is supervise running? give its socket with --socket or SUPERVISE_SOCKET)",
		e.Socket, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// ServerError is an error reply of the supervisor. It matches
// [ErrUnknownProgram] and [ErrPermissionDenied] with errors.Is.
type ServerError struct {
	Status  int    // the HTTP status
	Code    string // the protocol's category: "unknown_program", "bad_request" …
	Message string
	Resume  *RestartResume // with Code "upgrading": how far a restart got
}

func (e *ServerError) Error() string { return e.Message }

func (e *ServerError) Is(target error) bool {
	switch target {
	case ErrUnknownProgram:
		return e.Code == codeUnknownProgram
	case ErrPermissionDenied:
		return e.Code == codeForbidden
	}
	return false
}

// Client talks to a supervisor over its control socket. It is safe for
// concurrent use; each call blocks until its reply is complete.
type Client struct {
	path    string
	trusted []int // server uids trusted besides root and our own
	tr      *http.Transport
	hc      *http.Client
}

// DialOption adjusts a [Client].
type DialOption func(*Client)

// TrustServerUID makes the client accept a server running as uid, besides
// root and the client's own uid: a supervisor of another user that admits
// us through its socket group.
func TrustServerUID(uid int) DialOption {
	return func(c *Client) { c.trusted = append(c.trusted, uid) }
}

// Dial returns a client for the socket at path. It does not connect:
// every call does (reusing idle connections), and reports an
// [*UnreachableError] when nobody answers, and an [*UntrustedServerError]
// when the listener runs as a uid it does not trust.
func Dial(path string, opts ...DialOption) *Client {
	c := &Client{path: path}
	for _, o := range opts {
		o(c)
	}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			conn, err := d.DialContext(ctx, "unix", path)
			if err != nil {
				return nil, err
			}
			if err := c.checkServer(conn); err != nil {
				conn.Close()
				return nil, err
			}
			return conn, nil
		},
		DisableCompression:  true,
		MaxIdleConnsPerHost: 8,
		IdleConnTimeout:     30 * time.Second, // below the server's idle timeout
	}
	c.tr, c.hc = tr, &http.Client{Transport: tr}
	return c
}

// Path is the socket the client talks to.
func (c *Client) Path() string { return c.path }

// Close closes the client's idle connections.
func (c *Client) Close() { c.tr.CloseIdleConnections() }

// StatusJSON is Status as the server encoded it: a JSON array of
// [ProgramStatus]. `status --json` prints it without decoding it.
func (c *Client) StatusJSON(ctx context.Context, names []string) (json.RawMessage, error) {
	var raw json.RawMessage
	err := c.resuming(ctx, "status", func() error {
		var err error
		raw, err = c.statusJSONOnce(ctx, names)
		return err
	})
	return raw, err
}

// statusJSONOnce is StatusJSON without the resume.
func (c *Client) statusJSONOnce(ctx context.Context, names []string) (json.RawMessage, error) {
	resp, err := c.do(ctx, "status", &statusArgs{programNames{names}})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if resp.ContentLength > 0 && resp.ContentLength < 64<<20 {
		buf.Grow(int(resp.ContentLength))
	}
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return nil, c.transportError(ctx, fmt.Errorf("reading the status reply: %w", err))
	}
	// A complete reply (the transport checks its length) is the server's
	// own encoding: a full json.Valid pass would cost more than the
	// server took to write it. Only its shape is checked.
	b := bytes.TrimSpace(buf.Bytes())
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' {
		return nil, fmt.Errorf("the status reply is not a JSON array: %.100q", b)
	}
	return b, nil
}

// do sends verb's request with arguments a and returns the response of a
// 2xx reply; any other reply is a *ServerError.
func (c *Client) do(ctx context.Context, verb string, a args) (*http.Response, error) {
	v, ok := verbNamed[verb]
	if !ok {
		return nil, fmt.Errorf("unknown verb %q", verb)
	}
	hr, err := v.encode(ctx, a)
	if err != nil {
		return nil, err
	}
	resp, err := c.hc.Do(hr)
	if err != nil {
		return nil, c.transportError(ctx, err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBodyBytes))
	if err != nil {
		return nil, c.transportError(ctx, err)
	}
	var er errorReply
	if err := json.Unmarshal(body, &er); err != nil || er.Error == "" {
		er = errorReply{Error: fmt.Sprintf("%s: %s", resp.Status, body), Code: codeFailed}
	}
	return nil, &ServerError{Status: resp.StatusCode, Code: er.Code, Message: er.Error, Resume: er.Resume}
}

// call sends verb's request and decodes the reply into out (nil: {"ok": true}).
// A command ended or refused for an upgrade in place is sent again once a
// supervisor answers: every verb but restart (see Restart) and upgrade
// does the same the second time.
func (c *Client) call(ctx context.Context, verb string, a args, out any) error {
	return c.resuming(ctx, verb, func() error { return c.callOnce(ctx, verb, a, out) })
}

// resuming runs once, one request of verb, and while an upgrade in place
// ends or refuses it, waits for a supervisor to answer and runs it again.
func (c *Client) resuming(ctx context.Context, verb string, once func() error) error {
	for range maxResumes {
		err := once()
		if verb == "upgrade" || !isUpgrading(err) {
			return err
		}
		if err := c.awaitUpgrade(ctx); err != nil {
			return err
		}
	}
	return once()
}

// callOnce is call without the resume.
func (c *Client) callOnce(ctx context.Context, verb string, a args, out any) error {
	resp, err := c.do(ctx, verb, a)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		out = &okReply{}
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return c.transportError(ctx, fmt.Errorf("reading the %s reply: %w", verb, err))
	}
	return nil
}

func stream[T any](c *Client, ctx context.Context, verb string, a args, fn func(T) error) error {
	resp, err := c.do(ctx, verb, a)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var v T
		if err := dec.Decode(&v); err != nil {
			if err == io.EOF {
				// The server ended the stream: for good, or until the new
				// binary of an upgrade in place serves it on.
				if resp.Trailer.Get(upgradeTrailer) != "" {
					return errStreamUpgrading
				}
				return nil
			}
			return c.transportError(ctx, fmt.Errorf("reading %s: %w", verb, err))
		}
		if err := fn(v); err != nil {
			return err
		}
	}
}

// socketAccess says who may use the socket at path, from its owner and
// mode: with socket_group set, the group has read and write.
func socketAccess(path string) string {
	st, err := os.Stat(path)
	if err != nil {
		return "the socket is for root and the supervisor's user"
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return "the socket is for root and the supervisor's user"
	}
	if st.Mode().Perm()&0o060 == 0o060 {
		group := strconv.Itoa(int(sys.Gid))
		if g, err := user.LookupGroupId(group); err == nil {
			group = g.Name
		}
		return fmt.Sprintf("the socket is for root, uid %d and the members of group %s", sys.Uid, group)
	}
	return fmt.Sprintf("the socket is for root and uid %d only; [supervisor] socket_group lets a group in", sys.Uid)
}

// transportError says why a request got no reply: the caller gave up,
// the socket refuses us, or nobody is there.
func (c *Client) transportError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var untrusted *UntrustedServerError
	if errors.As(err, &untrusted) {
		return untrusted
	}
	if errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) {
		return fmt.Errorf("%w: uid %d cannot connect to %s (%s)", ErrPermissionDenied, os.Getuid(), c.path, socketAccess(c.path))
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return &UnreachableError{Socket: c.path, Err: op.Err}
	}
	return &UnreachableError{Socket: c.path, Err: fmt.Errorf("connection lost: %w", err)}
}
