package connlimit

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestLimit(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := New(raw, 2, "test listener", "text/plain", "busy\n", nil)
	defer ln.Close()
	accepted := make(chan net.Conn, 10)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	dial := func() net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", raw.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	var held []net.Conn
	for range 2 {
		dial()
		held = append(held, <-accepted)
	}
	// The third is refused with the canned reply, after its request.
	c := dial()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the refusal: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 503 || string(body) != "busy\n" || resp.Header.Get("Content-Type") != "text/plain" {
		t.Fatalf("refusal: %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	select {
	case c := <-accepted:
		t.Fatalf("a connection over the limit was handed out: %v", c.RemoteAddr())
	default:
	}
	// A slot given back (twice closing counts once) admits the next.
	held[0].Close()
	held[0].Close()
	dial()
	select {
	case c := <-accepted:
		if _, ok := c.(interface{ NetConn() net.Conn }); !ok {
			t.Errorf("accepted %T has no NetConn", c)
		}
	case <-time.After(time.Minute):
		t.Fatal("a freed slot admitted nothing")
	}
	c = dial()
	io.WriteString(c, "GET / HTTP/1.1\r\n\r\n")
	line, _ := bufio.NewReader(c).ReadString('\n')
	if !strings.HasPrefix(line, "HTTP/1.1 503") {
		t.Fatalf("limit full again, got %q", line)
	}
}

// A full listener with MakeRoom closes the longest-waiting connection of
// the client holding the most, never one being served, and refuses when
// none waits.
func TestMakeRoom(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := New(raw, 3, "test listener", "text/plain", "busy\n", nil)
	ln.MakeRoom(func(c net.Conn) string { return c.RemoteAddr().(*net.TCPAddr).IP.String() })
	defer ln.Close()
	accepted := make(chan net.Conn, 10)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	// Two clients on loopback: 127.0.0.2 (the greedy one) and 127.0.0.1.
	dial := func(from string) (client, server net.Conn) {
		t.Helper()
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		c, err := d.Dial("tcp", raw.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		select {
		case s := <-accepted:
			return c, s
		case <-time.After(time.Minute):
			t.Fatalf("a connection from %s was not admitted", from)
		}
		return nil, nil
	}
	open := func(s net.Conn) bool {
		ln.mu.Lock()
		defer ln.mu.Unlock()
		_, ok := ln.conns[s.(*conn)]
		return ok
	}
	closedByServer := func(c net.Conn) bool {
		_ = c.SetReadDeadline(time.Now().Add(time.Minute))
		_, err := c.Read(make([]byte, 1))
		return err == io.EOF
	}

	a1, s1 := dial("127.0.0.2")
	_, s2 := dial("127.0.0.2")
	_, s3 := dial("127.0.0.2")
	ln.Waiting(s1, false) // s1 is served, then waits again: now after s2
	ln.Waiting(s1, true)
	ln.Waiting(s3, false) // s3 is being served

	// The newcomer from 127.0.0.1 takes s2's slot: the greedy client's
	// longest waiting, not s1 (waiting since later) nor s3 (served).
	_, s4 := dial("127.0.0.1")
	if open(s2) || !open(s1) || !open(s3) || !open(s4) {
		t.Fatalf("after the 4th: s1 %v s2 %v s3 %v s4 %v, want only s2 closed", open(s1), open(s2), open(s3), open(s4))
	}
	// The greedy one dials again: it takes its own s1's slot, not s4's.
	dial("127.0.0.2")
	if open(s1) || !open(s4) {
		t.Fatalf("the greedy client's redial closed s4 (%v) rather than its own s1 (%v)", !open(s4), !open(s1))
	}
	if !closedByServer(a1) {
		t.Fatal("the client of a closed connection did not see it closed")
	}

	// Nothing waits: the next is refused as without MakeRoom.
	ln.mu.Lock()
	var all []net.Conn
	for c := range ln.conns {
		all = append(all, c)
	}
	ln.mu.Unlock()
	for _, c := range all {
		ln.Waiting(c, false)
	}
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.1")}}
	c, err := d.Dial("tcp", raw.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET / HTTP/1.1\r\n\r\n")
	line, _ := bufio.NewReader(c).ReadString('\n')
	if !strings.HasPrefix(line, "HTTP/1.1 503") {
		t.Fatalf("every connection served, got %q", line)
	}
}
