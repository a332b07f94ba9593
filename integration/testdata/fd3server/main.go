// fd3server is a single-instance HTTP server that binds nothing: it
// serves the sockets it inherits at descriptors 3… (socket activation) and
// answers each request, one per connection, with its pid, VERSION and the
// socket-activation variables it got. It refuses to start when LISTEN_PID
// is not its own pid, as sd_listen_fds(3) would. START_DELAY delays its
// first accept (a slow start). On SIGTERM it stops accepting and answers
// every connection it took before it exits: it keeps its own count rather
// than http.Server's, whose Shutdown can return while Serve hands over a
// connection it just accepted.
package main

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"
)

func main() {
	if os.Getenv("LISTEN_PID") != strconv.Itoa(os.Getpid()) || os.Getenv("LISTEN_FDS") == "" {
		fmt.Fprintf(os.Stderr, "fd3server: LISTEN_PID=%q LISTEN_FDS=%q, and my pid is %d\n", os.Getenv("LISTEN_PID"), os.Getenv("LISTEN_FDS"), os.Getpid())
		os.Exit(3)
	}
	n, _ := strconv.Atoi(os.Getenv("LISTEN_FDS"))
	var lns []net.Listener
	for fd := 3; fd < 3+n; fd++ {
		ln, err := net.FileListener(os.NewFile(uintptr(fd), "listen"))
		if err != nil {
			fmt.Fprintln(os.Stderr, "fd3server:", err)
			os.Exit(1)
		}
		lns = append(lns, ln)
	}
	if d, err := time.ParseDuration(os.Getenv("START_DELAY")); err == nil {
		time.Sleep(d)
	}
	body := fmt.Sprintf("pid=%d version=%s listen_pid=%s fds=%s names=%s uid=%d\n", os.Getpid(), os.Getenv("VERSION"),
		os.Getenv("LISTEN_PID"), os.Getenv("LISTEN_FDS"), os.Getenv("LISTEN_FDNAMES"), os.Getuid())
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-stop
		for _, ln := range lns {
			ln.Close() // ours only: supervise holds the socket, the backlog stays
		}
	}()
	fmt.Println("serving on fd 3")
	var conns, loops sync.WaitGroup
	for _, ln := range lns {
		loops.Go(func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				conns.Go(func() { answer(c, body) })
			}
		})
	}
	loops.Wait()
	conns.Wait()
}

func answer(c net.Conn, body string) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	req, err := http.ReadRequest(bufio.NewReader(c))
	if err != nil {
		return
	}
	req.Body.Close()
	fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
}
