package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/supervise-dev/supervise/ctl"
)

const webToken = "console-test-token-0123456789abcdef"

// hostileOut is what the program "evil" prints: markup and script that the
// page must show as text.
const hostileOut = `<script>alert(1)</script>"><img src=x onerror=alert(2)>`

// consoleDaemon runs a supervisor with the HTTP listener and, when token
// is set, its token file; it returns the listener's base URL.
func consoleDaemon(t *testing.T, token bool) (*daemon, string) {
	t.Helper()
	dir := t.TempDir()
	tokenLine := ""
	if token {
		tf := filepath.Join(dir, "http.token")
		if err := os.WriteFile(tf, []byte(webToken+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		tokenLine = fmt.Sprintf("http_token_file = %q\n", tf)
	}
	hostile := filepath.Join(dir, "hostile.txt")
	if err := os.WriteFile(hostile, []byte(hostileOut+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "supervise.toml")
	cfg := fmt.Sprintf(`[supervisor]
%s
[program.web]
command = ["sh", "-c", "echo web up; exec sleep 100000"]
[program.api]
command = ["sh", "-c", "echo api up; exec sleep 100000"]
[program.evil]
command = ["sh", "-c", "cat %[2]s; cat %[2]s >&2; exit 1"]
restart = "never"
`, tokenLine, hostile)
	if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, dir, file, "--http", "127.0.0.1:0")
	base := "http://" + d.httpAddr()
	eventually(t, "web and api running, evil failed", 60*time.Second, func() bool {
		st := d.status()
		return st["web"].State == "Running" && st["api"].State == "Running" && st["evil"].State == "Failed"
	})
	return d, base
}

func post(t *testing.T, url, auth, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	c := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The control verbs over HTTP: not there without a token file; with one,
// 401 for every verb without the token or with a wrong one (and nothing
// done), the socket's JSON with it. The token is never logged.
func TestWebConsoleControlNeedsToken(t *testing.T) {
	needRoot(t)
	ro, roBase := consoleDaemon(t, false)
	for _, v := range ctl.Verbs() {
		if code, _ := post(t, roBase+"/v1/"+v, "Bearer "+webToken, `{"names":["web"]}`); code != 404 {
			t.Errorf("read-only listener: POST /v1/%s: %d, want 404", v, code)
		}
	}
	_ = ro

	d, base := consoleDaemon(t, true)
	pid := d.status()["web"].Pid
	for _, v := range ctl.Verbs() {
		for _, auth := range []string{"", "Bearer wrong-token-0123456789abcdef", "Bearer " + webToken[:len(webToken)-1], "Basic " + webToken} {
			for _, method := range []string{"GET", "POST"} {
				var code int
				if method == "GET" {
					code, _ = get(t, "GET", base+"/v1/"+v+"?name=web", map[string]string{"Authorization": auth})
				} else {
					code, _ = post(t, base+"/v1/"+v, auth, `{"names":["web"]}`)
				}
				if code != 401 {
					t.Errorf("%s /v1/%s with %q: %d, want 401", method, v, auth, code)
				}
			}
		}
	}
	if st := d.status(); st["web"].Pid != pid || st["web"].State != "Running" {
		t.Fatalf("a verb ran without the token: web %+v", st["web"])
	}
	code, body := post(t, base+"/v1/restart", "Bearer "+webToken, `{"names":["web"]}`)
	if code != 200 || strings.TrimSpace(body) != `{"ok":true}` {
		t.Fatalf("POST /v1/restart with the token: %d %s", code, body)
	}
	if st := d.status()["web"]; st.Pid == pid || st.Pid == 0 {
		t.Errorf("after the restart web has pid %d (was %d)", st.Pid, pid)
	}
	code, body = get(t, "GET", base+"/v1/why?name=evil", map[string]string{"Authorization": "Bearer " + webToken})
	if code != 200 || !strings.Contains(body, `"reason":"Error"`) {
		t.Errorf("GET /v1/why: %d %s", code, body)
	}
	if strings.Contains(d.stderr.String(), webToken) || strings.Contains(d.stdout.String(), webToken) {
		t.Errorf("the token is in supervise's output")
	}
}

// A token file others may read keeps supervise from starting, naming the
// file and line of the key.
func TestWebConsoleTokenFileReadableByOthersRefused(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	tf := filepath.Join(dir, "http.token")
	if err := os.WriteFile(tf, []byte(webToken), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "supervise.toml")
	if err := os.WriteFile(file, []byte(fmt.Sprintf("[supervisor]\nhttp_token_file = %q\n[program.web]\ncommand = [\"sleep\", \"100000\"]\n", tf)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(binary, "run", "-c", file, "--socket", filepath.Join(dir, "s.sock"), "--http", "127.0.0.1:0").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "supervise.toml:2: supervisor.http_token_file: ") || !strings.Contains(string(out), "others can read the token") {
		t.Fatalf("supervise with a token file of mode 0644: %v\n%s", err, out)
	}
}

// browser starts headless Chromium for the test; it skips without one.
func browser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("no chromium on PATH (scripts/test.sh installs it)")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // root
		chromedp.Headless,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1100, 700),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	ctx, cancelC := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() { cancelC(); cancelB(); cancelA() })
	return ctx
}

// The page in a real browser: every program and its state; program output
// shown as text (no script runs, no image is made); a stop made with
// supervisectl shows without a reload; a restart clicked on the page with
// the token gives the program a new pid.
func TestWebConsoleInBrowser(t *testing.T) {
	needRoot(t)
	d, base := consoleDaemon(t, true)
	ctx := browser(t)
	var dialogs atomic.Int32
	if err := chromedp.Listen(ctx, func(ev any) {
		if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			dialogs.Add(1)
			go chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}
	}); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	poll := func(what, expr string) {
		t.Helper()
		_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(time.Minute)))
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
	}

	must("loading the page", chromedp.Do(ctx, chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#programs tbody tr[data-name="evil"]`))))
	table, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#programs`)))
	must("reading the table", err)
	for _, want := range []string{"web", "api", "evil", "Running", "Failed"} {
		if !strings.Contains(table, want) {
			t.Errorf("the page's table lacks %q:\n%s", want, table)
		}
	}

	// evil's why record and log: its markup as text.
	must("evil's detail", chromedp.Do(ctx, chromedp.Navigate(base+"/#evil")))
	poll("evil's log", `document.getElementById("log").textContent.includes("onerror")`)
	why, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(`#why`)))
	must("reading why", err)
	logText, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(`#log`)))
	must("reading the log", err)
	imgs, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.images.length`))
	must("counting images", err)
	if !strings.Contains(why, hostileOut) || !strings.Contains(logText, hostileOut) {
		t.Errorf("the program's output is not shown as its text:\nwhy: %q\nlog: %q", why, logText)
	}
	if imgs != 0 || dialogs.Load() != 0 {
		t.Errorf("the program's output became markup: %d images, %d dialogs", imgs, dialogs.Load())
	}

	// A stop from supervisectl shows without a reload.
	d.ctlOK("stop", "web")
	poll("web stopped on the page", `document.querySelector('tr[data-name="web"] td.state').textContent === "Stopped"`)

	// A restart clicked on the page, with the token.
	pid := d.status()["api"].Pid
	_, err = chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](`sessionStorage.setItem("supervise-token", `+strconv.Quote(webToken)+`)`))
	must("setting the token", err)
	must("clicking restart", chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`tr[data-name="api"] button[data-verb="restart"]`))))
	eventually(t, "api restarted with a new pid", 60*time.Second, func() bool {
		st := d.status()["api"]
		return st.Pid != 0 && st.Pid != pid && st.State == "Running"
	})
	poll("api's new pid on the page", `document.querySelector('tr[data-name="api"] td[data-label="pid"]').textContent === "`+strconv.Itoa(d.status()["api"].Pid)+`"`)

	// SUPERVISE_SCREENSHOT=FILE keeps a picture of the page (docs/console.png).
	if out := os.Getenv("SUPERVISE_SCREENSHOT"); out != "" {
		must("screenshot page", chromedp.Do(ctx, chromedp.Navigate(base+"/#evil")))
		poll("the log", `document.getElementById("log").textContent.length > 0`)
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		must("screenshot", err)
		if err := os.WriteFile(out, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// procFigures are a process's CPU time (utime+stime, in clock ticks) and
// bytes written (wchar: files and sockets alike).
func procFigures(t *testing.T, pid int) (ticks, wchar int64) {
	t.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	io, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(io), "\n") {
		if v, ok := strings.CutPrefix(l, "wchar: "); ok {
			wchar, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return u + s, wchar
}

// The cost of open pages on the supervisor: SUPERVISE_MEASURE_CONSOLE=1
// opens 10 tabs of the console (one on a program's detail, which polls
// its log too) for 30 s and logs the supervisor's CPU and bytes written
// per second against 30 s with none. A measurement, not a check.
func TestWebConsoleCost(t *testing.T) {
	if os.Getenv("SUPERVISE_MEASURE_CONSOLE") == "" {
		t.Skip("set SUPERVISE_MEASURE_CONSOLE=1 to measure")
	}
	needRoot(t)
	d, base := consoleDaemon(t, false)
	pid := d.cmd.Process.Pid
	const span = 30 * time.Second
	const hz = 100 // USER_HZ
	measure := func() (cpuPct, bytesPerSec float64) {
		t0, w0 := procFigures(t, pid)
		time.Sleep(span) // the span measured, not a wait for a state
		t1, w1 := procFigures(t, pid)
		return float64(t1-t0) / hz / span.Seconds() * 100, float64(w1-w0) / span.Seconds()
	}
	idleCPU, idleBytes := measure()
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/")); err != nil { // the first tab starts the browser
		t.Fatal(err)
	}
	for i := range 9 {
		tab, cancel := chromedp.NewContext(ctx)
		t.Cleanup(cancel)
		u := base + "/"
		if i == 0 {
			u += "#web"
		}
		if err := chromedp.Do(tab, chromedp.Navigate(u)); err != nil {
			t.Fatal(err)
		}
	}
	cpu, bytes := measure()
	t.Logf("supervisor, no page: %.2f%% CPU, %.0f B/s written; 10 pages: %.2f%% CPU, %.0f B/s written", idleCPU, idleBytes, cpu, bytes)
}

// Following streams over the HTTP listener hold their connections; at most
// 8 are served at once (503 past that), and /healthz is answered while
// they run.
func TestWebConsoleFollowersDoNotStarveHealthz(t *testing.T) {
	needRoot(t)
	_, base := consoleDaemon(t, true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	follow := func() int {
		req, _ := http.NewRequestWithContext(ctx, "GET", base+"/v1/logs?follow=1&name=web", nil)
		req.Header.Set("Authorization", "Bearer "+webToken)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 {
			resp.Body.Close()
		}
		return resp.StatusCode // a 200 stream stays open until ctx ends
	}
	for i := range 8 {
		if code := follow(); code != 200 {
			t.Fatalf("follower %d: %d", i, code)
		}
	}
	if code := follow(); code != 503 {
		t.Errorf("a 9th follower: %d, want 503", code)
	}
	for range 20 {
		if code, body := get(t, "GET", base+"/healthz", nil); code != 200 {
			t.Fatalf("/healthz with 8 followers: %d %s", code, body)
		}
	}
}
