package ctl

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/logs"
)

// openFds counts this process's descriptors.
func openFds(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestConnectionLimit: connections past max_connections are answered
// "too many" and closed at once, whatever the others do; a slot that frees
// up is used again.
func TestConnectionLimit(t *testing.T) {
	const max = 8
	b := newMemBackend("web")
	ts := startServer(t, b, "", func(c *ServerConfig) { c.MaxConns = max })

	// max connections that follow events and never read: each holds a
	// slot for as long as it likes.
	var held []net.Conn
	for range max {
		c, err := net.Dial("unix", ts.path)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, "GET /v1/events?follow=1 HTTP/1.1\r\nHost: x\r\n\r\n")
		held = append(held, c)
	}
	// The server has accepted them all once a request through a new
	// connection is refused; poll, since accepting is asynchronous.
	var body []byte
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, b, err := rawExchange(t, ts.path, "GET /v1/status HTTP/1.1\r\nHost: x\r\n\r\n")
		if err == nil && resp.StatusCode == 503 {
			body = b
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("connection %d was not refused: %v %v", max+1, resp, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(string(body), "max_connections") || !strings.Contains(string(body), `"code":"unavailable"`) {
		t.Fatalf("refusal body %q", body)
	}
	// The client reports it as a server error, not as no supervisor.
	_, err := newClient(t, ts.path).Status(t.Context(), nil)
	var se *ServerError
	if !errors.As(err, &se) || se.Code != codeUnavailable {
		t.Fatalf("status over the limit: %v, want an unavailable ServerError", err)
	}

	// Hundreds more over the limit are each told why, and cost the
	// server no descriptor.
	before := openFds(t)
	for range 300 {
		c, err := net.Dial("unix", ts.path)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, "POST /v1/stop HTTP/1.1\r\nHost: x\r\nContent-Length: 17\r\n\r\n{\"names\":[\"web\"]}")
		buf := make([]byte, 512)
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		n, _ := io.ReadFull(c, buf[:len("HTTP/1.1 503")])
		if !strings.HasPrefix(string(buf[:n]), "HTTP/1.1 503") {
			t.Fatalf("connection over the limit read %q", buf[:n])
		}
		c.Close()
	}
	// The server closes its end after writing the refusal, which the
	// client may have read first: wait (bounded) for those closes; a
	// descriptor kept per refused connection stays and fails this.
	after := openFds(t)
	for settle := time.Now().Add(10 * time.Second); after > before+2 && time.Now().Before(settle); after = openFds(t) {
		time.Sleep(10 * time.Millisecond)
	}
	if after > before+2 {
		t.Fatalf("descriptors went from %d to %d over 300 refused connections", before, after)
	}

	// One slot back: a client is served again.
	held[0].Close()
	deadline = time.Now().Add(30 * time.Second)
	for {
		st, err := newClient(t, ts.path).Status(t.Context(), nil)
		if err == nil && len(st) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status after a slot freed: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, c := range held[1:] {
		c.Close()
	}
}

// TestFollowerLimit: following streams past max_followers are refused with
// a reason, one-shot requests still work, and a stream that ends frees its
// place.
func TestFollowerLimit(t *testing.T) {
	const max = 3
	b := newMemBackend("web")
	ts := startServer(t, b, "", func(c *ServerConfig) { c.MaxFollowers = max })
	c := newClient(t, ts.path)

	cancels := make([]context.CancelFunc, 0, max)
	dones := make([]chan error, 0, max)
	for i := range max {
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- c.Logs(ctx, []string{"web"}, 0, true, func(logs.Line) error { return nil }) }()
		cancels, dones = append(cancels, cancel), append(dones, done)
		waitFollowers(t, b, i+1)
	}
	// Bounded, so that a server without the limit fails the test instead
	// of following forever.
	ectx, ecancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer ecancel()
	err := c.Events(ectx, true, func(Event) error { return nil })
	var se *ServerError
	if !errors.As(err, &se) || se.Code != codeUnavailable || !strings.Contains(se.Message, "max_followers") {
		t.Fatalf("follower %d: %v, want refused naming max_followers", max+1, err)
	}
	// Not following is not limited.
	if err := c.Logs(t.Context(), []string{"web"}, 10, false, func(logs.Line) error { return nil }); err != nil {
		t.Fatalf("logs without follow at the limit: %v", err)
	}
	if st, err := c.Status(t.Context(), nil); err != nil || len(st) != 1 {
		t.Fatalf("status at the follower limit: %v %v", st, err)
	}
	cancels[0]()
	<-dones[0]
	waitFollowers(t, b, max-1)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Logs(ctx, []string{"web"}, 0, true, func(logs.Line) error { return nil }) }()
	waitFollowers(t, b, max)
	for _, cancel := range append(cancels[1:], cancel) {
		cancel()
	}
	for _, d := range append(dones[1:], done) {
		if err := <-d; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("follower ended with %v", err)
		}
	}
	waitNoLeaks(t, b)
}
