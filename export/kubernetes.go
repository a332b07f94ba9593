package export

import (
	"fmt"
	"math"
	"net"
	"net/url"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/internal/unixsig"
)

// KubernetesOptions shape the exported objects.
type KubernetesOptions struct {
	Image     string // the image every container runs (required)
	Name      string // the app: a prefix of object names and the app label
	Namespace string // "" leaves it to kubectl's context
	// Pod keeps the box together: every program a container of one Pod
	// (one-shots as init containers, programs others wait for as native
	// sidecars), instead of a workload per program.
	Pod bool
}

// Kubernetes returns YAML documents, "---" between them: a Deployment per
// long-running program (replicas = instances), a Job per one-shot
// (restart "never" or "on-failure"), and a Service for a program whose
// probes name a port, with a warning for each key Kubernetes cannot
// express as supervise does.
func Kubernetes(cfg *config.Config, opts KubernetesOptions) ([]byte, []Warning, error) {
	if opts.Image == "" {
		return nil, nil, fmt.Errorf("export kubernetes: an image is needed (--image)")
	}
	if opts.Name == "" || !isDNSLabel(opts.Name) {
		return nil, nil, fmt.Errorf("export kubernetes: name %q: use lower-case letters, digits and '-'", opts.Name)
	}
	var ws warnings
	if len(cfg.Supervisor.ExitOn) > 0 {
		ws.add("", "supervisor.exit_on", "not mapped: each program is its own workload, and nothing stops the others when one ends")
	}
	if cfg.Supervisor.HTTP != "" {
		ws.add("", "supervisor.http", "not mapped: the state is the API server's (kubectl get), not on an HTTP port")
	}
	ws.ownSettings(cfg.Supervisor, "Kubernetes")
	var docs []obj
	if opts.Pod {
		var err error
		if docs, err = podDocs(cfg, opts, &ws); err != nil {
			return nil, ws, err
		}
	} else {
		for _, p := range cfg.Programs {
			k := &kubeWriter{opts: opts, ws: &ws, p: p, cfg: cfg}
			docs = append(docs, k.workload()...)
		}
	}
	for _, d := range docs {
		if s, bad := notUTF8(d); bad {
			return nil, ws, fmt.Errorf("export kubernetes: %q is not UTF-8, which Kubernetes strings must be (YAML reads \\xNN as a character, not a byte)", s)
		}
	}
	var b strings.Builder
	for i, d := range docs {
		if i > 0 {
			b.WriteString("---\n")
		}
		yamlDoc(&b, d)
	}
	return []byte(b.String()), ws, nil
}

type kubeWriter struct {
	opts KubernetesOptions
	ws   *warnings
	p    *config.Program
	cfg  *config.Config
}

func (k *kubeWriter) warn(key, format string, args ...any) { k.ws.add(k.p.Name, key, format, args...) }

// objName is the object name of program name: APP-NAME, as a DNS label.
func (k *kubeWriter) objName(name string) string {
	return DNSLabel(k.opts.Name + "-" + name)
}

func (k *kubeWriter) meta(name string) obj {
	m := obj{{"name", k.objName(name)}}
	m.set("namespace", k.opts.Namespace)
	m.set("labels", obj{{"app.kubernetes.io/name", k.opts.Name}, {"app.kubernetes.io/component", DNSLabel(name)}})
	return m
}

func (k *kubeWriter) workload() []obj {
	p := k.p
	labels := obj{{"app.kubernetes.io/name", k.opts.Name}, {"app.kubernetes.io/component", DNSLabel(p.Name)}}
	pod := k.podSpec()
	var out []obj
	if p.Scheduled() {
		out = append(out, k.cronJob()) // kubernetes_cron.go
	} else if p.Restart == config.RestartAlways {
		spec := obj{{"replicas", p.Instances}, {"selector", obj{{"matchLabels", labels}}},
			{"template", obj{{"metadata", obj{{"labels", labels}}}, {"spec", pod}}}}
		if !p.Autostart {
			spec[0] = kv{"replicas", 0}
			k.warn("autostart", "false: replicas is 0; scale it up to start")
		}
		out = append(out, obj{{"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"metadata", k.meta(p.Name)}, {"spec", spec}})
	} else {
		policy := "OnFailure"
		backoffLimit := 6 // the Job default: on-failure retries
		if p.Restart == config.RestartNever {
			policy, backoffLimit = "Never", 0
		}
		pod.set("restartPolicy", policy)
		spec := obj{{"backoffLimit", backoffLimit}, {"completions", p.Instances}, {"parallelism", p.Instances},
			{"template", obj{{"metadata", obj{{"labels", labels}}}, {"spec", pod}}}}
		if !p.Autostart {
			spec = append(spec, kv{"suspend", true})
			k.warn("autostart", "false: the Job is suspended; resume it to run")
		}
		if p.Restart == config.RestartOnFailure {
			k.warn("restart", `"on-failure" becomes a Job with restartPolicy OnFailure and the Job's default backoffLimit of 6`)
		}
		out = append(out, obj{{"apiVersion", "batch/v1"}, {"kind", "Job"}, {"metadata", k.meta(p.Name)}, {"spec", spec}})
	}
	if ports := k.ports(); len(ports) > 0 {
		var sp []any
		for _, port := range ports {
			sp = append(sp, obj{{"name", "p" + strconv.Itoa(port)}, {"port", port}, {"targetPort", port}})
		}
		out = append(out, obj{{"apiVersion", "v1"}, {"kind", "Service"}, {"metadata", k.meta(p.Name)},
			{"spec", obj{{"selector", labels}, {"ports", sp}}}})
	}
	return out
}

func (k *kubeWriter) podSpec() obj {
	p := k.p
	pod := obj{}
	var inits []any
	if h := p.Hooks.PreStart; h != nil {
		switch {
		case h.HTTP != nil:
			k.warn("hooks.pre_start", "an HTTP pre_start has no Kubernetes equivalent: make it an init container with curl by hand")
		case h.Sleep > 0:
			k.warn("hooks.pre_start", "a sleep before the start is not exported: a Pod has no such pause")
		default:
			c := obj{{"name", "pre-start"}, {"image", k.opts.Image}, {"command", expandedStrs(h.Command)}}
			c.set("workingDir", k.workingDir())
			c.set("env", k.env())
			inits = append(inits, c)
		}
	}
	for _, d := range p.DependsOn {
		if init := k.waitFor(d); init != nil {
			inits = append(inits, init)
		}
	}
	pod.set("initContainers", inits)
	pod.set("containers", []any{k.container()})
	if p.StopTimeout > 0 {
		// The kubelet counts preStop inside the grace, as supervise does.
		pod.set("terminationGracePeriodSeconds", ceilSeconds(p.StopTimeout))
	}
	if p.Sandbox.Hostname != "" {
		pod.set("hostname", p.Sandbox.Hostname)
	}
	return pod
}

// waitFor is an init container that waits for dependency d, where
// Kubernetes can: its Service answering, for one that has one.
func (k *kubeWriter) waitFor(d string) obj {
	dp := k.cfg.Program(d)
	if dp == nil {
		return nil
	}
	kw := &kubeWriter{opts: k.opts, ws: k.ws, p: dp, cfg: k.cfg}
	ports := kw.ports()
	cond := k.p.DependsOnCondition(d)
	if cond == config.DependCompleted {
		k.warn("depends_on."+d, "%q runs as an init container in each Pod of %q, before it starts (its own Job runs it once more)", d, k.p.Name)
		quiet := &kubeWriter{opts: k.opts, ws: &warnings{}, p: dp, cfg: k.cfg} // dp's own export warns
		c := obj{{"name", DNSLabel("run-" + d)}, {"image", k.opts.Image}, {"command", expandedStrs(dp.Command)}}
		c.set("workingDir", quiet.workingDir())
		c.set("env", quiet.env())
		return c
	}
	if len(ports) == 0 {
		k.warn("depends_on."+d, "Kubernetes starts workloads independently: nothing waits for %q here (no Service port to wait on)", d)
		return nil
	}
	k.warn("depends_on."+d, "an init container waits for the Service of %q before the first start only; later restarts of it do not stop this one", d)
	host := fmt.Sprintf("%s %d", k.objName(d), ports[0])
	return obj{{"name", DNSLabel("wait-" + d)}, {"image", k.opts.Image},
		{"command", []any{"sh", "-c", "until nc -z " + host + "; do sleep 1; done"}}}
}

func (k *kubeWriter) container() obj {
	p := k.p
	c := obj{{"name", DNSLabel(p.Name)}, {"image", k.opts.Image}, {"command", expandedStrs(p.Command)}}
	c.set("workingDir", k.workingDir())
	c.set("env", k.env())
	c.set("resources", k.resources())
	c.set("securityContext", k.security())
	c.set("startupProbe", k.probe("startup", p.Probes.Startup))
	c.set("readinessProbe", k.probe("readiness", p.Probes.Readiness))
	c.set("livenessProbe", k.probe("liveness", p.Probes.Liveness))
	c.set("lifecycle", k.lifecycle())
	if p.Probes.Readiness == nil && p.Probes.Startup == nil {
		switch {
		case p.Notify != config.NotifyNone:
			k.warn("notify", "Kubernetes has no readiness protocol: the container is ready once it runs (add a readiness probe)")
		case p.ReadyLogLine != "":
			k.warn("ready_log_line", "Kubernetes cannot watch output for readiness: the container is ready once it runs (add a readiness probe)")
		}
	}
	if p.Watchdog > 0 {
		k.warn("watchdog", "no Kubernetes equivalent: use a liveness probe")
	}
	if len(p.Listen) > 0 {
		k.warn("listen", "not mapped: the container binds its port itself; a Service and kube-proxy keep connections away from a Pod that restarts (with a readiness probe)")
	}
	k.unmapped()
	return c
}

// workingDir is the container's workingDir: the program's dir when it
// was given, else "" for the image's own. The config knows only the
// absolute path: the default is the config file's directory, and a
// relative dir was resolved against it, paths of the exporting machine
// the image need not have (warned).
func (k *kubeWriter) workingDir() string {
	dir, base := k.p.Dir, k.cfg.Dir
	switch {
	case dir == "" || dir == base:
		return ""
	case base != "" && strings.HasPrefix(dir, strings.TrimSuffix(base, "/")+"/"):
		k.warn("dir", "%q is under the config file's directory on this machine (a relative dir is resolved against it): make sure the image has it", dir)
	}
	return dir
}

func (k *kubeWriter) env() []any {
	p := k.p
	if len(p.EnvFiles) > 0 {
		k.warn("env_file", "inlined into env (a ConfigMap would do as well)")
	}
	var out []any
	for _, name := range sortedKeys(p.Env) {
		out = append(out, obj{{"name", name}, {"value", kubeletLiteral(p.Env[name])}})
	}
	if p.Port != 0 {
		out = append(out, obj{{"name", "PORT"}, {"value", strconv.Itoa(p.Port)}})
	}
	return out
}

func (k *kubeWriter) resources() obj {
	sb := k.p.Sandbox
	limits := obj{}
	if sb.CPUMax > 0 {
		limits.set("cpu", strconv.Itoa(int(math.Ceil(sb.CPUMax*1000)))+"m")
	}
	if sb.MemoryMax > 0 {
		limits.set("memory", strconv.FormatInt(sb.MemoryMax, 10))
	}
	if sb.PidsMax > 0 {
		k.warn("sandbox.pids_max", "the pids limit is the node's in Kubernetes (the kubelet's podPidsLimit)")
	}
	for _, ns := range sb.Namespaces {
		k.warn("sandbox.namespaces", "%s: a Pod has its own namespaces already; a container has no separate %s namespace", ns, ns)
	}
	if len(sb.Rlimits) > 0 {
		k.warn("sandbox.rlimits", "Kubernetes sets no rlimits per container: they come from the container runtime")
	}
	if len(limits) == 0 {
		return nil
	}
	// Requests as the limits: what the program was given on the box.
	return obj{{"limits", limits}, {"requests", append(obj(nil), limits...)}}
}

func (k *kubeWriter) security() obj {
	p := k.p
	s := obj{}
	if p.User != "" {
		if uid, ok := numericID(p.User, func(n string) (string, error) {
			u, err := user.Lookup(n)
			if err != nil {
				return "", err
			}
			return u.Uid, nil
		}); ok {
			s.set("runAsUser", uid)
		} else {
			k.warn("user", "%q has no uid on this machine: set runAsUser by hand", p.User)
		}
	}
	if p.Group != "" {
		if gid, ok := numericID(p.Group, func(n string) (string, error) {
			g, err := user.LookupGroup(n)
			if err != nil {
				return "", err
			}
			return g.Gid, nil
		}); ok {
			s.set("runAsGroup", gid)
		} else {
			k.warn("group", "%q has no gid on this machine: set runAsGroup by hand", p.Group)
		}
	}
	if len(p.Groups) > 0 {
		k.warn("groups", "supplementary groups are the Pod's (securityContext.supplementalGroups), not exported")
	}
	if p.Sandbox.NoNewPrivileges {
		s = append(s, kv{"allowPrivilegeEscalation", false})
	}
	if p.Sandbox.Umask >= 0 {
		k.warn("sandbox.umask", "Kubernetes has no umask setting: set it in the image or the command")
	}
	return s
}

func numericID(s string, lookup func(string) (string, error)) (int64, bool) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, true
	}
	v, err := lookup(s)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}

func (k *kubeWriter) probe(kind string, pr *config.Probe) obj {
	if pr == nil {
		return nil
	}
	key := "probes." + kind
	o := obj{}
	switch {
	case len(pr.Command) > 0:
		o = append(o, kv{"exec", obj{{"command", expandedStrs(pr.Command)}}})
	case pr.HTTP != nil:
		h := k.httpGet(key, pr.HTTP.URL, pr.HTTP.Headers)
		if h == nil {
			return nil
		}
		if pr.HTTP.ExpectStatus != 0 {
			k.warn(key+".http.expect_status", "the kubelet passes any 200–399; an exact status cannot be asked for")
		}
		o = append(o, kv{"httpGet", h})
	default:
		host, port := splitHostPort(pr.TCP)
		if !local(host) {
			k.warn(key+".tcp", "the kubelet probes the Pod's own IP; %q is not probed", host)
		}
		o = append(o, kv{"tcpSocket", obj{{"port", port}}})
	}
	for _, x := range []struct {
		name string
		d    time.Duration
		min  int
	}{{"initialDelaySeconds", pr.InitialDelay, 0}, {"periodSeconds", pr.Period, 1}, {"timeoutSeconds", pr.Timeout, 1}} {
		s := ceilSeconds(x.d)
		if time.Duration(s)*time.Second != x.d && x.d > 0 {
			k.warn(key, "%s %v is rounded up to %ds: the kubelet counts whole seconds", x.name, x.d, s)
		}
		o = append(o, kv{x.name, max(s, x.min)})
	}
	o = append(o, kv{"successThreshold", pr.SuccessThreshold}, kv{"failureThreshold", pr.FailureThreshold})
	if pr.TerminationGracePeriod > 0 {
		o = append(o, kv{"terminationGracePeriodSeconds", ceilSeconds(pr.TerminationGracePeriod)})
	}
	return o
}

// httpGet maps a URL to an httpGet action on the Pod's own address.
func (k *kubeWriter) httpGet(key, raw string, headers map[string]string) obj {
	u, err := url.Parse(raw)
	if err != nil {
		k.warn(key, "%v", err)
		return nil
	}
	host, port := splitHostPort(u.Host)
	if u.Port() == "" {
		port = 80
		if u.Scheme == "https" {
			port = 443
		}
	}
	if !local(host) {
		k.warn(key, "the kubelet calls the Pod's own IP; the host %q becomes a Host header", host)
		if headers == nil {
			headers = map[string]string{}
		}
		if _, ok := headers["Host"]; !ok {
			headers["Host"] = host
		}
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	if u.RawQuery != "" {
		path += "?" + u.RawQuery
	}
	h := obj{{"path", path}, {"port", port}, {"scheme", strings.ToUpper(u.Scheme)}}
	var hs []any
	for _, name := range sortedKeys(headers) {
		hs = append(hs, obj{{"name", name}, {"value", headers[name]}})
	}
	h.set("httpHeaders", hs)
	return h
}

func (k *kubeWriter) lifecycle() obj {
	p := k.p
	l := obj{}
	for _, x := range []struct {
		key, name string
		h         *config.Hook
	}{{"hooks.post_start", "postStart", p.Hooks.PostStart}, {"hooks.pre_stop", "preStop", p.Hooks.PreStop}} {
		if x.h == nil {
			continue
		}
		if x.h.Sleep > 0 {
			secs := ceilSeconds(x.h.Sleep)
			if time.Duration(secs)*time.Second != x.h.Sleep {
				k.warn(x.key+".sleep", "%v is rounded up to %ds: the kubelet's sleep action counts whole seconds", x.h.Sleep, secs)
			}
			l.set(x.name, obj{{"sleep", obj{{"seconds", secs}}}})
			continue
		}
		if x.h.HTTP != nil {
			if x.h.HTTP.Method != "" && x.h.HTTP.Method != "GET" {
				k.warn(x.key+".http.method", "the kubelet's httpGet sends GET, not %q", x.h.HTTP.Method)
			}
			if g := k.httpGet(x.key, x.h.HTTP.URL, x.h.HTTP.Headers); g != nil {
				l.set(x.name, obj{{"httpGet", g}})
			}
			continue
		}
		// The kubelet runs a lifecycle handler's command as written.
		l.set(x.name, obj{{"exec", obj{{"command", strs(x.h.Command)}}}})
	}
	if p.Hooks.PostStop != nil {
		k.warn("hooks.post_stop", "Kubernetes has no hook after a container ends")
	}
	if p.StopSignal != 0 && p.StopSignal != syscall.SIGTERM {
		k.warn("stop_signal", "SIG%s: set STOPSIGNAL in the image (lifecycle.stopSignal needs the ContainerStopSignals feature)", unixsig.Name(p.StopSignal))
	}
	return l
}

// ports are the ports p's probes name: what a Service for p exposes.
func (k *kubeWriter) ports() []int {
	var out []int
	seen := map[int]bool{}
	for _, pr := range []*config.Probe{k.p.Probes.Startup, k.p.Probes.Readiness, k.p.Probes.Liveness} {
		if pr == nil {
			continue
		}
		port := 0
		switch {
		case pr.HTTP != nil:
			if u, err := url.Parse(pr.HTTP.URL); err == nil {
				_, port = splitHostPort(u.Host)
			}
		case pr.TCP != "":
			_, port = splitHostPort(pr.TCP)
		}
		if port > 0 && !seen[port] {
			seen[port] = true
			out = append(out, port)
		}
	}
	return out
}

// unmapped warns about the keys Kubernetes has no place for.
func (k *kubeWriter) unmapped() {
	k.warnRows(kubeUnmappedSettings)
	p := k.p
	for _, x := range []struct {
		key string
		h   *config.Hook
	}{{"hooks.pre_start", p.Hooks.PreStart}, {"hooks.post_start", p.Hooks.PostStart}, {"hooks.pre_stop", p.Hooks.PreStop}, {"hooks.post_stop", p.Hooks.PostStop}} {
		if x.h != nil && x.h.Timeout != config.DefaultHookTimeout {
			k.warn(x.key+".timeout", "Kubernetes bounds hooks by the Pod's terminationGracePeriodSeconds (an init container by nothing), not one by one")
		}
		if x.h != nil && x.h.HTTP != nil && x.h.HTTP.ExpectStatus != 0 {
			k.warn(x.key+".http.expect_status", "the kubelet's httpGet passes any 200–399; an exact status cannot be asked for")
		}
	}
	k.warnRows(kubeUnmappedRunning)
	for _, x := range outputSettings(p) {
		if x.o.File != "" {
			k.warn(x.key, "log files are not exported: Kubernetes keeps the containers' output")
		}
		if !x.o.Console {
			k.warn(x.key+".console", "false: Kubernetes keeps the containers' output anyway")
		}
		if x.o.Timestamps {
			k.warn(x.key+".timestamps", "the container runtime stamps each line (kubectl logs --timestamps)")
		}
	}
	if len(p.SuccessExitCodes) > 1 || len(p.SuccessExitCodes) == 1 && p.SuccessExitCodes[0] != 0 {
		k.warn("success_exit_codes", "only exit 0 is success for Kubernetes")
	}
}

// kubeUnmappedRow is a setting Kubernetes has no place for: when set
// says the program gives it, the exporter warns why.
type kubeUnmappedRow struct {
	key, why string
	set      func(k *kubeWriter) bool
}

func (k *kubeWriter) warnRows(rows []kubeUnmappedRow) {
	for _, r := range rows {
		if r.set(k) {
			k.warn(r.key, "%s", r.why)
		}
	}
}

// kubeUnmappedSettings are warned about before the hooks' settings,
// kubeUnmappedRunning after them.
var (
	kubeUnmappedSettings = []kubeUnmappedRow{
		{"backoff", "the kubelet's crash backoff (10s doubling to 5m) applies; its maximum is a node setting (KubeletConfiguration crashLoopBackOff.maxContainerRestartPeriod)", func(k *kubeWriter) bool {
			return k.p.Backoff.Initial != config.DefaultBackoffInitial || k.p.Backoff.Max != config.DefaultBackoffMax
		}},
		{"backoff.reset_after", "the kubelet forgives past crashes after 10 minutes of running; it is not set per container", func(k *kubeWriter) bool {
			return k.p.Backoff.ResetAfter != config.DefaultBackoffResetAfter
		}},
		{"min_stop_grace", "Kubernetes gives the preStop hook and the stop signal one terminationGracePeriodSeconds together; there is no floor to map", func(k *kubeWriter) bool {
			return k.p.MinStopGrace != config.DefaultMinStopGrace
		}},
		{"exit_tail_lines", "not mapped: the lines supervisectl why keeps of a run; Kubernetes keeps the logs its own way", func(k *kubeWriter) bool {
			return k.p.ExitTailLines != config.DefaultExitTailLines
		}},
		{"notify_fd", "the s6 notification descriptor has no Kubernetes equivalent", func(k *kubeWriter) bool {
			return k.p.Notify == config.NotifyFD && k.p.NotifyFD != config.DefaultNotifyFD
		}},
		{"rollout", "not exported: set the Deployment's strategy.rollingUpdate.maxUnavailable and progressDeadlineSeconds by hand", func(k *kubeWriter) bool {
			return k.p.Rollout != (config.Rollout{})
		}},
		{"stderr", `"stdout": the container log has both streams anyway, but the runtime reads them apart, each line tagged with its own; for one stream in the order written, run the command under sh -c 'exec "$@" 2>&1' by hand`, func(k *kubeWriter) bool {
			return k.p.StderrToStdout
		}},
	}
	kubeUnmappedRunning = []kubeUnmappedRow{
		{"restart_rules", "not exported: container restartPolicyRules need Kubernetes 1.34 or later; add them by hand", func(k *kubeWriter) bool {
			return len(k.p.RestartRules) > 0
		}},
		{"watch", "restarting on file changes has no Kubernetes equivalent", func(k *kubeWriter) bool { return k.p.Watch != nil }},
		{"critical", "each program is its own workload: nothing stops the others when it ends", func(k *kubeWriter) bool { return k.p.Critical }},
		{"sidecar", "exported as its own workload; in one Pod it would be an init container with restartPolicy Always", func(k *kubeWriter) bool {
			return k.p.Sidecar && !k.opts.Pod
		}},
	}
)

func strs(xs []string) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// kubeletLiteral escapes s for a field the kubelet expands $(VAR) in (a
// container's command and args, an env value, an exec probe's command):
// $$ is its escape for $, and supervise expands nothing there.
func kubeletLiteral(s string) string { return strings.ReplaceAll(s, "$", "$$") }

// expandedStrs is a command for a field the kubelet expands.
func expandedStrs(xs []string) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = kubeletLiteral(x)
	}
	return out
}

func ceilSeconds(d time.Duration) int {
	return int((d + time.Second - 1) / time.Second)
}

func splitHostPort(hp string) (string, int) {
	host, port, err := net.SplitHostPort(hp)
	if err != nil {
		return hp, 0
	}
	n, _ := strconv.Atoi(port)
	return host, n
}

func local(host string) bool {
	return host == "" || host == "localhost" || host == "127.0.0.1" || host == "::1" || host == "0.0.0.0"
}

// DNSLabel makes a DNS label (RFC 1123) of s, as Kubernetes names want
// them: lower case, '-' for anything else, at most 63 bytes.
func DNSLabel(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '-'
	}, s)
	if len(s) > 63 {
		s = s[:63]
	}
	return strings.Trim(s, "-")
}

func isDNSLabel(s string) bool { return s != "" && DNSLabel(s) == s }

// podDocs is --mode pod: one Pod with every program, and one Service for
// the ports its probes name. Programs run in dependency order: one-shots
// (what others wait for to complete) as init containers, each run to its
// end before the next; programs that others wait for to run or be ready,
// and sidecars, as native sidecars (init containers with restartPolicy
// Always, up once their startup probe passes); the rest, servers whatever
// their restart, as the Pod's containers.
func podDocs(cfg *config.Config, opts KubernetesOptions, ws *warnings) ([]obj, error) {
	pb := &podBuilder{cfg: cfg, opts: opts, ws: ws, needed: map[string]bool{}, oneShot: map[string]bool{}}
	for _, p := range cfg.Programs {
		for _, d := range p.DependsOn {
			// Only a dependent waiting for it to complete says a program
			// ends by itself: a restart of "never" or "on-failure" alone
			// is as often a server's.
			if p.DependsOnCondition(d) == config.DependCompleted {
				pb.oneShot[d] = true
			} else {
				pb.needed[d] = true
			}
		}
	}
	pb.policy = podRestartPolicy(cfg, pb.oneShot, pb.needed)
	for _, p := range inDependencyOrder(cfg) {
		pb.add(p)
	}
	if len(pb.containers) == 0 && len(pb.inits) == 0 && len(pb.crons) > 0 {
		return pb.crons, nil // jobs only: their runs are Pods of their own
	}
	if len(pb.containers) == 0 {
		return nil, fmt.Errorf("export kubernetes --mode pod: every program is a sidecar or a one-shot, and a Pod needs a container: export without --mode pod")
	}
	return pb.docs(), nil
}

// podBuilder gathers the Pod's containers, program by program.
type podBuilder struct {
	cfg             *config.Config
	opts            KubernetesOptions
	ws              *warnings
	needed, oneShot map[string]bool // programs others wait for to run or be ready, to complete
	policy          string          // the Pod's restartPolicy
	inits           []any
	containers      []any
	ports           []int
	grace           int
	crons           []obj
}

// add places p in the Pod by its role, or beside it as a CronJob.
func (pb *podBuilder) add(p *config.Program) {
	k := &kubeWriter{opts: pb.opts, ws: pb.ws, p: p, cfg: pb.cfg}
	if p.Scheduled() { // a CronJob beside the Pod: its runs are Pods of their own
		pb.crons = append(pb.crons, k.cronJob())
		return
	}
	if p.Instances > 1 {
		k.warn("instances", "one Pod runs one container per program: run more Pods (a Deployment of this Pod) for %d", p.Instances)
	}
	if p.Hooks.PreStart != nil {
		k.warn("hooks.pre_start", "not exported in a Pod: make it an init container before %q by hand", p.Name)
	}
	if !p.Autostart {
		k.warn("autostart", "false: every container of the Pod starts with it")
	}
	if p.Sandbox.Hostname != "" {
		k.warn("sandbox.hostname", "a Pod has one hostname for all its containers: set spec.hostname by hand")
	}
	c := k.container()
	switch {
	case pb.oneShot[p.Name] && !p.Sidecar:
		pb.inits = append(pb.inits, pb.runToCompletion(k, c))
	case pb.needed[p.Name] || p.Sidecar || pb.oneShot[p.Name]:
		pb.inits = append(pb.inits, pb.nativeSidecar(k, c))
	default:
		if kubePolicy(p.Restart) != pb.policy {
			k.warn("restart", "%q: the Pod's restartPolicy (%s) is every container's", p.Restart, pb.policy)
		}
		pb.containers = append(pb.containers, c)
	}
	for _, port := range k.ports() {
		if !slices.Contains(pb.ports, port) {
			pb.ports = append(pb.ports, port)
		}
	}
	pb.grace = max(pb.grace, ceilSeconds(p.StopTimeout))
}

// runToCompletion makes c a one-shot's init container, run to its end
// before the next.
func (pb *podBuilder) runToCompletion(k *kubeWriter, c obj) obj {
	p := k.p
	if pb.needed[p.Name] {
		k.warn("depends_on", "a one-shot runs to its end as an init container: the programs waiting for it to run or be ready start after it ended")
	}
	if kubePolicy(p.Restart) != pb.policy {
		k.warn("restart", "%q: an init container that fails is retried by the Pod's restartPolicy (%s here)", p.Restart, pb.policy)
	}
	// A run-to-completion init container takes no probes and no
	// lifecycle handlers.
	return slices.DeleteFunc(c, func(e kv) bool {
		drop := strings.HasSuffix(e.k, "Probe") || e.k == "lifecycle"
		if drop {
			k.warn(e.k, "dropped: an init container that runs to completion takes no %s", e.k)
		}
		return drop
	})
}

// nativeSidecar makes c an init container with restartPolicy Always,
// which the next container waits for until its startup probe passes.
func (pb *podBuilder) nativeSidecar(k *kubeWriter, c obj) obj {
	p := k.p
	if p.Restart != config.RestartAlways {
		k.warn("restart", "%q: a native sidecar is restarted whenever it exits, until the Pod ends", p.Restart)
	}
	c = append(c, kv{"restartPolicy", "Always"})
	if p.Probes.Startup == nil && p.Probes.Readiness != nil {
		// A sidecar is up for the next container once its startup
		// probe passes: readiness is what its dependents waited for.
		if sp := k.probe("readiness", p.Probes.Readiness); sp != nil {
			c = append(c, kv{"startupProbe", sp})
		}
	}
	return c
}

// docs are the Pod, the CronJobs beside it and the Service of its ports.
func (pb *podBuilder) docs() []obj {
	labels := obj{{"app.kubernetes.io/name", pb.opts.Name}}
	meta := obj{{"name", pb.opts.Name}}
	meta.set("namespace", pb.opts.Namespace)
	meta.set("labels", labels)
	spec := obj{}
	spec.set("initContainers", pb.inits)
	spec.set("containers", pb.containers)
	if pb.policy != "Always" {
		spec.set("restartPolicy", pb.policy)
	}
	if pb.grace > 0 {
		spec.set("terminationGracePeriodSeconds", pb.grace)
	}
	docs := []obj{{{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", meta}, {"spec", spec}}}
	docs = append(docs, pb.crons...)
	if len(pb.ports) > 0 {
		var sp []any
		for _, port := range pb.ports {
			sp = append(sp, obj{{"name", "p" + strconv.Itoa(port)}, {"port", port}, {"targetPort", port}})
		}
		docs = append(docs, obj{{"apiVersion", "v1"}, {"kind", "Service"}, {"metadata", meta}, {"spec", obj{{"selector", labels}, {"ports", sp}}}})
	}
	return docs
}

// kubePolicy is the Pod restartPolicy of a restart policy.
func kubePolicy(r config.RestartPolicy) string {
	switch r {
	case config.RestartNever:
		return "Never"
	case config.RestartOnFailure:
		return "OnFailure"
	}
	return "Always"
}

// podRestartPolicy is the Pod's restartPolicy: the restart of its
// containers when they all agree, else Always, which restarts the most
// and keeps the servers up. It is also what retries a failed init
// container.
func podRestartPolicy(cfg *config.Config, oneShot, needed map[string]bool) string {
	policy := ""
	for _, p := range cfg.Programs {
		if oneShot[p.Name] || needed[p.Name] || p.Sidecar || p.Scheduled() { // a CronJob's policy is its own
			continue
		}
		switch kp := kubePolicy(p.Restart); {
		case policy == "":
			policy = kp
		case policy != kp:
			return "Always"
		}
	}
	if policy == "" {
		return "Always"
	}
	return policy
}

// inDependencyOrder lists cfg's programs with every dependency before its
// dependents, otherwise in file order.
func inDependencyOrder(cfg *config.Config) []*config.Program {
	var out []*config.Program
	seen := map[string]bool{}
	var visit func(p *config.Program)
	visit = func(p *config.Program) {
		if seen[p.Name] {
			return
		}
		seen[p.Name] = true
		for _, d := range p.DependsOn {
			if dp := cfg.Program(d); dp != nil {
				visit(dp)
			}
		}
		out = append(out, p)
	}
	for _, p := range cfg.Programs {
		visit(p)
	}
	return out
}
