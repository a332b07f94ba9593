package ctl

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// The test binary also plays a client run by another process (another uid,
// or a fresh process for the latency benchmark), dispatched on this variable.
const helperEnv = "CTL_TEST_HELPER"

// helperReply is what a helper client prints.
type helperReply struct {
	OK          bool   `json:"ok"`
	Programs    int    `json:"programs"`
	Error       string `json:"error,omitempty"`
	Permission  bool   `json:"permission,omitempty"`
	Unreachable bool   `json:"unreachable,omitempty"`
}

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "status":
		// A client calling status, reporting how it went.
		c := Dial(os.Getenv("CTL_TEST_SOCKET"))
		st, err := c.Status(context.Background(), nil)
		r := helperReply{OK: err == nil, Programs: len(st)}
		if err != nil {
			var ue *UnreachableError
			r.Error, r.Permission, r.Unreachable = err.Error(), errors.Is(err, ErrPermissionDenied), errors.As(err, &ue)
		}
		json.NewEncoder(os.Stdout).Encode(r)
		os.Exit(0)
	case "status-json":
		// What `supervisectl status --json` does, minus flag parsing.
		raw, err := Dial(os.Getenv("CTL_TEST_SOCKET")).StatusJSON(context.Background(), nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		os.Stdout.Write(append(raw, '\n'))
		os.Exit(0)
	case "fake-server":
		// A squatter: any process listening where the supervisor is
		// expected, claiming a program and that every command worked.
		ln, err := net.Listen("unix", os.Getenv("CTL_TEST_SOCKET"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		fmt.Println("ready")
		http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			if strings.HasSuffix(r.URL.Path, "/status") {
				io.WriteString(w, `[{"name":"fake","state":"Running","pid":1}]`+"\n")
				return
			}
			io.WriteString(w, `{"ok":true}`+"\n")
		}))
		os.Exit(0)
	default:
		fmt.Fprintln(os.Stderr, "unknown helper", os.Getenv(helperEnv))
		os.Exit(2)
	}
}

// testServer is a Server on a socket in a temporary directory, serving
// until the test ends.
type testServer struct {
	*Server
	path    string
	backend *memBackend
	stop    func() // cancels Serve and waits for it
}

func startServer(t testing.TB, b *memBackend, dir string, mutate func(*ServerConfig)) *testServer {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	cfg := ServerConfig{Path: dir + "/s.sock", Backend: b}
	if mutate != nil {
		mutate(&cfg)
	}
	srv := NewServer(cfg)
	if err := srv.Listen(); err != nil {
		t.Fatalf("Listen: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Serve: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Errorf("Serve did not return 30s after its context ended")
			}
			if err := srv.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return &testServer{Server: srv, path: cfg.Path, backend: b, stop: stop}
}

// newClient returns a client whose idle connections close with the test.
func newClient(t testing.TB, path string) *Client {
	c := Dial(path)
	t.Cleanup(c.Close)
	return c
}

// rawExchange writes raw bytes on a fresh connection and reads one reply.
func rawExchange(t *testing.T, path, raw string) (*http.Response, []byte, error) {
	t.Helper()
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(conn, raw); err != nil {
		return nil, nil, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

// serverGoroutines lists the goroutines that serve a connection or stream
// from the backend: none may remain once the clients are gone.
func serverGoroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		for _, f := range []string{"net/http.(*conn).serve", "ctl.streamItems", "ctl.streamOut", "ctl.(*Server).ServeHTTP"} {
			if strings.Contains(g, f) {
				out = append(out, g)
				break
			}
		}
	}
	return out
}

// waitNoLeaks waits (30s at most) until no connection or stream goroutine
// is left and the backend has no stream or follower left.
func waitNoLeaks(t *testing.T, b *memBackend) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		gs := serverGoroutines()
		streams, followers := b.streams.Load(), b.followerCount()
		if len(gs) == 0 && streams == 0 && followers == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("leak after 30s: %d backend streams, %d followers, %d goroutines:\n%s",
				streams, followers, len(gs), strings.Join(gs, "\n\n"))
		}
		<-tick.C
	}
}
