// Command holdconns holds connections to an HTTP listener as a hostile
// local user would, for the listener tests: -n connections at once, each
// dialed again as soon as the server closes it.
//
// In -mode keepalive each connection sends GET /healthz every -every and
// reads the reply (a byte the server sends unasked ends the connection); in -mode slowloris each sends the start of a request
// and one more header line every -every, never finishing it; -mode flood
// is slowloris from -n connections, more than the listener admits.
//
// It prints "holding N" once N connections are open (keepalive: each got
// its first 200; flood: each was dialed), and on SIGTERM a line of
// counts, then exits.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

var (
	answered = map[int]*atomic.Int64{200: {}, 503: {}}
	other    atomic.Int64 // replies with another status
	dials    atomic.Int64
	closed   atomic.Int64 // connections the server closed
	held     atomic.Int64
)

func main() {
	addr := flag.String("addr", "", "HOST:PORT")
	n := flag.Int("n", 64, "connections to hold")
	mode := flag.String("mode", "keepalive", "keepalive or slowloris")
	every := flag.Duration("every", 2*time.Second, "pause between requests or header lines")
	flag.Parse()
	hold := keepAlive
	switch *mode {
	case "slowloris":
		hold = slowloris
	case "flood":
		// Slowloris from more connections than the listener admits: as
		// soon as one is closed, it dials again.
		hold = func(c net.Conn, every time.Duration, dialed func()) {
			dialed()
			slowloris(c, every, func() {})
		}
	}
	var once sync.Once
	ready := func() {
		if held.Add(1) == int64(*n) {
			once.Do(func() { fmt.Printf("holding %d\n", *n) })
		}
	}
	for range *n {
		go func() {
			first := true
			for {
				c, err := net.Dial("tcp", *addr)
				if err != nil {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				dials.Add(1)
				hold(c, *every, func() {
					if first {
						first = false
						ready()
					}
				})
				c.Close()
				closed.Add(1)
			}
		}()
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	fmt.Printf("dials=%d closed_by_server=%d replies_200=%d replies_503=%d replies_other=%d\n",
		dials.Load(), closed.Load(), answered[200].Load(), answered[503].Load(), other.Load())
}

// keepAlive asks for /healthz on c every period until the server closes c.
func keepAlive(c net.Conn, every time.Duration, served func()) {
	br := bufio.NewReader(c)
	for {
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: h\r\n\r\n"); err != nil {
			return
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if n, ok := answered[resp.StatusCode]; ok {
			n.Add(1)
		} else {
			other.Add(1)
		}
		if resp.StatusCode == 200 {
			served()
		}
		if resp.Close || !wait(c, every) {
			return
		}
	}
}

// wait waits for a period on c, and reports false when the server closed
// it meanwhile, to dial again at once.
func wait(c net.Conn, every time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(every))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	ok := errors.As(err, &ne) && ne.Timeout()
	_ = c.SetReadDeadline(time.Time{})
	return ok
}

// slowloris sends a request's headers one line per period, never the
// blank line that ends them, until the server closes c.
func slowloris(c net.Conn, every time.Duration, started func()) {
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: h\r\n"); err != nil {
		return
	}
	for i := 0; ; i++ {
		if !wait(c, every) {
			return // the server answered (a 503 or a 408) or closed
		}
		if i == 0 {
			started()
		}
		if _, err := fmt.Fprintf(c, "X-Wait-%d: x\r\n", i); err != nil {
			return
		}
	}
}
