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
