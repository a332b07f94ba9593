// Command webapp is a small HTTP server for the rollout tests: instance N
// of a program listens on 127.0.0.1:$BASE_PORT+N ($SUPERVISE_INSTANCE) and
// answers every GET with its instance, pid and $VERSION, after
// $START_DELAY (a Go duration) if set. On SIGTERM it
// stops accepting and finishes the requests under way, as a real server
// does. "webapp check" is its readiness probe: exit 0 when the instance
// answers 200.
package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

func addr() string {
	base, _ := strconv.Atoi(os.Getenv("BASE_PORT"))
	inst, _ := strconv.Atoi(os.Getenv("SUPERVISE_INSTANCE"))
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(base+inst))
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "check" {
		c := &http.Client{Timeout: time.Second}
		resp, err := c.Get("http://" + addr() + "/")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			os.Exit(1)
		}
		return
	}
	if d, err := time.ParseDuration(os.Getenv("START_DELAY")); err == nil {
		time.Sleep(d) // a server that takes a while to come up
	}
	ln, err := net.Listen("tcp", addr())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	body := fmt.Sprintf("instance %s pid %d version %s\n", os.Getenv("SUPERVISE_INSTANCE"), os.Getpid(), os.Getenv("VERSION"))
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, body)
	}), ReadHeaderTimeout: 5 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	fmt.Println("listening on", ln.Addr())
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	<-drained // Serve returns at once; the requests under way finish here
}
