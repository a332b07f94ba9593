package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/export"
)

// decodeStrict reads every YAML document of out into the k8s.io/api type
// of its kind: unknown fields, duplicate keys and wrong types fail.
func decodeStrict(t *testing.T, out []byte) []any {
	t.Helper()
	var objs []any
	for i, doc := range strings.Split(string(out), "\n---\n") {
		js, err := yaml.YAMLToJSONStrict([]byte(doc))
		if err != nil {
			t.Fatalf("document %d is not strict YAML: %v\n%s", i, err, doc)
		}
		var tm metav1.TypeMeta
		if err := json.Unmarshal(js, &tm); err != nil {
			t.Fatal(err)
		}
		var o any
		switch tm.APIVersion + "/" + tm.Kind {
		case "apps/v1/Deployment":
			o = &appsv1.Deployment{}
		case "batch/v1/Job":
			o = &batchv1.Job{}
		case "batch/v1/CronJob":
			o = &batchv1.CronJob{}
		case "v1/Service":
			o = &corev1.Service{}
		case "v1/Pod":
			o = &corev1.Pod{}
		default:
			t.Fatalf("document %d: unexpected kind %s/%s", i, tm.APIVersion, tm.Kind)
		}
		dec := json.NewDecoder(bytes.NewReader(js))
		dec.DisallowUnknownFields()
		if err := dec.Decode(o); err != nil {
			t.Fatalf("document %d (%s) does not decode strictly into the API type: %v\n%s", i, tm.Kind, err, doc)
		}
		objs = append(objs, o)
	}
	return objs
}

func TestKubernetesExportExampleDecodes(t *testing.T) {
	cfg, err := config.Load("../../config.example.toml")
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := export.Kubernetes(cfg, export.KubernetesOptions{Image: "example/app:1", Name: "demo", Namespace: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	objs := decodeStrict(t, out)
	if len(objs) < len(cfg.Programs) {
		t.Fatalf("%d objects for %d programs", len(objs), len(cfg.Programs))
	}
	web := objs[0].(*appsv1.Deployment)
	c := web.Spec.Template.Spec.Containers[0]
	if web.Name != "demo-web" || web.Namespace != "shop" || *web.Spec.Replicas != 1 || c.Image != "example/app:1" ||
		c.LivenessProbe == nil || c.LivenessProbe.Exec == nil || c.LivenessProbe.PeriodSeconds != 10 ||
		c.Lifecycle == nil || c.Lifecycle.PreStop == nil || *web.Spec.Template.Spec.TerminationGracePeriodSeconds != 5 ||
		len(web.Spec.Template.Spec.InitContainers) != 1 {
		t.Errorf("web: %+v", web)
	}
}

func TestKubernetesExportMapping(t *testing.T) {
	dir := t.TempDir()
	cfg, err := config.Parse(filepath.Join(dir, "supervise.toml"), []byte(`
[program.db]
command = "postgres"
user = "0"
group = "0"
stop_timeout = "20s"
[program.db.probes.readiness]
tcp = 5432
period = "5s"
[program.db.sandbox]
memory_max = "256MiB"
cpu_max = 1.5
no_new_privileges = true

[program.web]
command = ["server", "--port", "8080"]
instances = 3
depends_on = ["db"]
env = { MODE = "prod" }
[program.web.probes.startup]
http = { url = "http://127.0.0.1:8080/healthz", headers = { X-Probe = "1" } }
failure_threshold = 30
termination_grace_period = "3s"
[program.web.probes.liveness]
http = "https://localhost:8443/live?deep=1"
timeout = "2s"
[program.web.hooks.pre_stop]
http = "http://127.0.0.1:8080/drain"

[program.migrate]
command = "migrate up"
restart = "never"
`))
	if err != nil {
		t.Fatal(err)
	}
	out, warns, err := export.Kubernetes(cfg, export.KubernetesOptions{Image: "shop:2", Name: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	objs := decodeStrict(t, out)
	byName := map[string]any{}
	for _, o := range objs {
		switch x := o.(type) {
		case *appsv1.Deployment:
			byName["deploy/"+x.Name] = x
		case *batchv1.Job:
			byName["job/"+x.Name] = x
		case *corev1.Service:
			byName["svc/"+x.Name] = x
		}
	}
	db := byName["deploy/shop-db"].(*appsv1.Deployment)
	dc := db.Spec.Template.Spec.Containers[0]
	if dc.Resources.Limits.Memory().Value() != 256<<20 || dc.Resources.Limits.Cpu().MilliValue() != 1500 ||
		dc.Resources.Requests.Memory().Value() != 256<<20 || *dc.SecurityContext.RunAsUser != 0 || *dc.SecurityContext.RunAsGroup != 0 ||
		*dc.SecurityContext.AllowPrivilegeEscalation || dc.ReadinessProbe.TCPSocket.Port.IntValue() != 5432 ||
		*db.Spec.Template.Spec.TerminationGracePeriodSeconds != 20 {
		t.Errorf("db container: %+v", dc)
	}
	svc := byName["svc/shop-db"].(*corev1.Service)
	if svc.Spec.Ports[0].Port != 5432 || svc.Spec.Selector["app.kubernetes.io/component"] != "db" {
		t.Errorf("db service: %+v", svc.Spec)
	}
	web := byName["deploy/shop-web"].(*appsv1.Deployment)
	wc := web.Spec.Template.Spec.Containers[0]
	sp, lp := wc.StartupProbe, wc.LivenessProbe
	if *web.Spec.Replicas != 3 || sp.HTTPGet.Path != "/healthz" || sp.HTTPGet.Port.IntValue() != 8080 || sp.HTTPGet.HTTPHeaders[0].Name != "X-Probe" ||
		sp.FailureThreshold != 30 || *sp.TerminationGracePeriodSeconds != 3 ||
		lp.HTTPGet.Scheme != corev1.URISchemeHTTPS || lp.HTTPGet.Path != "/live?deep=1" || lp.TimeoutSeconds != 2 ||
		wc.Lifecycle.PreStop.HTTPGet.Path != "/drain" {
		t.Errorf("web container: %+v", wc)
	}
	if ic := web.Spec.Template.Spec.InitContainers; len(ic) != 1 || !strings.Contains(strings.Join(ic[0].Command, " "), "nc -z shop-db 5432") {
		t.Errorf("web waits for db: %+v", ic)
	}
	job := byName["job/shop-migrate"].(*batchv1.Job)
	if job.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever || *job.Spec.BackoffLimit != 0 {
		t.Errorf("migrate job: %+v", job.Spec)
	}
	keys := map[string]bool{}
	for _, w := range warns {
		keys[w.Program+" "+w.Key] = true
	}
	if !keys["web depends_on.db"] {
		t.Errorf("no warning that the wait orders the first start only: %v", warns)
	}
}

// --mode pod: one Pod in dependency order: the one-shot migration as an
// init container, the database others wait for as a native sidecar with a
// startup probe, the web as a container; the Pod decodes strictly.
func TestKubernetesExportPod(t *testing.T) {
	cfg, err := config.Parse(filepath.Join(t.TempDir(), "supervise.toml"), []byte(`
[program.web]
command = "server"
depends_on = { db = "ready", migrate = "completed" }
[program.web.probes.readiness]
http = "http://127.0.0.1:8080/ready"

[program.db]
command = "postgres"
[program.db.probes.readiness]
tcp = 5432

[program.migrate]
command = "migrate up"
restart = "never"
depends_on = ["db"]
[program.migrate.probes.liveness]
tcp = 9999
`))
	if err != nil {
		t.Fatal(err)
	}
	out, warns, err := export.Kubernetes(cfg, export.KubernetesOptions{Image: "shop:2", Name: "shop", Pod: true})
	if err != nil {
		t.Fatal(err)
	}
	objs := decodeStrict(t, out)
	pod, ok := objs[0].(*corev1.Pod)
	if !ok {
		t.Fatalf("first object %T, want a Pod", objs[0])
	}
	ic, cs := pod.Spec.InitContainers, pod.Spec.Containers
	if len(ic) != 2 || ic[0].Name != "db" || ic[0].RestartPolicy == nil || *ic[0].RestartPolicy != corev1.ContainerRestartPolicyAlways ||
		ic[0].StartupProbe == nil || ic[0].StartupProbe.TCPSocket.Port.IntValue() != 5432 ||
		ic[1].Name != "migrate" || ic[1].RestartPolicy != nil || ic[1].LivenessProbe != nil {
		t.Errorf("init containers: %+v", ic)
	}
	if len(cs) != 1 || cs[0].Name != "web" || cs[0].ReadinessProbe == nil {
		t.Errorf("containers: %+v", cs)
	}
	if svc := objs[1].(*corev1.Service); len(svc.Spec.Ports) != 3 {
		t.Errorf("service ports: %+v", svc.Spec.Ports)
	}
	found := false
	for _, w := range warns {
		found = found || w.Program == "migrate" && w.Key == "livenessProbe"
	}
	if !found {
		t.Errorf("no warning for the dropped probe of the init container: %v", warns)
	}
}

// A dependency that must complete runs as an init container of its
// dependent's Pod.
func TestKubernetesExportCompletedDependency(t *testing.T) {
	cfg, err := config.Parse(filepath.Join(t.TempDir(), "supervise.toml"), []byte(`
[program.migrate]
command = "migrate up"
restart = "never"
env = { DB = "x" }
[program.web]
command = "server"
depends_on = { migrate = "completed" }
`))
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := export.Kubernetes(cfg, export.KubernetesOptions{Image: "shop:2", Name: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range decodeStrict(t, out) {
		if d, ok := o.(*appsv1.Deployment); ok {
			ic := d.Spec.Template.Spec.InitContainers
			if len(ic) != 1 || ic[0].Name != "run-migrate" || strings.Join(ic[0].Command, " ") != "migrate up" || ic[0].Env[0].Value != "x" {
				t.Errorf("web's init containers: %+v", ic)
			}
			return
		}
	}
	t.Fatal("no Deployment")
}

// kubeletExpand is what the kubelet does to a container's command, args
// and env values and to an exec probe's command (the API reference of
// Container.command and EnvVar.value): $(NAME) becomes the variable's
// value, $$ a $, and any other $ stays. Every name is defined here, so a
// reference left unescaped shows.
func kubeletExpand(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			if end := strings.IndexByte(s[i+2:], ')'); end >= 0 {
				b.WriteString("EXPANDED")
				i += 2 + end
				continue
			}
			b.WriteString("$(")
			i++
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

func expandAll(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = kubeletExpand(x)
	}
	return out
}

// supervise passes $(VAR) to the program as it is; the kubelet would
// expand it in a command, its args, an env value and an exec probe, so
// the export escapes it there, and only there (a lifecycle exec handler
// is run as written).
func TestKubernetesExportKeepsDollarLiteral(t *testing.T) {
	cfg, err := config.Parse(filepath.Join(t.TempDir(), "supervise.toml"), []byte(`
[program.web]
command = ["/bin/echo", "$(HOME)", "$$(X)", "$", "a$b", "$(", "$$"]
env = { A = "$(HOME)", B = "x$(Y)z", C = "$" }
[program.web.hooks.pre_start]
command = ["echo", "$(PRE)"]
[program.web.hooks.pre_stop]
command = ["echo", "$(STOP)"]
[program.web.probes.liveness]
command = ["check", "$(PROBE)"]

[program.mig]
command = ["migrate", "$(M)"]
restart = "never"
env = { M = "$(N)" }

[program.api]
command = "serve"
depends_on = { mig = "completed" }
`))
	if err != nil {
		t.Fatal(err)
	}
	web, mig := cfg.Program("web"), cfg.Program("mig")
	check := func(what string, got, want []string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s: the program gets %q, want %q", what, got, want)
		}
	}
	checkEnv := func(what string, env []corev1.EnvVar, want map[string]string) {
		t.Helper()
		got := map[string]string{}
		for _, e := range env {
			got[e.Name] = kubeletExpand(e.Value)
		}
		if !maps.Equal(got, want) {
			t.Errorf("%s: env %q, want %q", what, got, want)
		}
	}
	for _, pod := range []bool{false, true} {
		out, _, err := export.Kubernetes(cfg, export.KubernetesOptions{Image: "shop:2", Name: "shop", Pod: pod})
		if err != nil {
			t.Fatal(err)
		}
		var containers []corev1.Container
		for _, o := range decodeStrict(t, out) {
			switch x := o.(type) {
			case *appsv1.Deployment:
				containers = append(containers, x.Spec.Template.Spec.InitContainers...)
				containers = append(containers, x.Spec.Template.Spec.Containers...)
			case *batchv1.Job:
				containers = append(containers, x.Spec.Template.Spec.InitContainers...)
				containers = append(containers, x.Spec.Template.Spec.Containers...)
			case *corev1.Pod:
				containers = append(containers, x.Spec.InitContainers...)
				containers = append(containers, x.Spec.Containers...)
			}
		}
		seen := map[string]bool{}
		for _, c := range containers {
			what := fmt.Sprintf("pod=%v %s", pod, c.Name)
			seen[c.Name] = true
			switch c.Name {
			case "web":
				check(what, expandAll(append(c.Command, c.Args...)), web.Command)
				checkEnv(what, c.Env, web.Env)
				check(what+" liveness", expandAll(c.LivenessProbe.Exec.Command), web.Probes.Liveness.Command)
				check(what+" preStop", c.Lifecycle.PreStop.Exec.Command, web.Hooks.PreStop.Command)
			case "pre-start":
				check(what, expandAll(c.Command), web.Hooks.PreStart.Command)
				checkEnv(what, c.Env, web.Env)
			case "mig", "run-mig":
				check(what, expandAll(c.Command), mig.Command)
				checkEnv(what, c.Env, mig.Env)
			}
		}
		if !seen["web"] || !seen["mig"] || !pod && (!seen["pre-start"] || !seen["run-mig"]) {
			t.Errorf("pod=%v: containers %v", pod, seen)
		}
	}
}

// fidelityConfig is a box as people write it: a long-running server that
// is restarted only when it fails, a one-shot migration it waits for, a
// sidecar proxy, hooks and probes, no dir but for the migration's.
const fidelityConfig = `
[program.api]
command = ["server", "--port", "8080"]
restart = "on-failure"
depends_on = { migrate = "completed", proxy = "running" }
[program.api.probes.readiness]
http = "http://127.0.0.1:8080/ready"
[program.api.probes.liveness]
tcp = 8080
[program.api.hooks.post_start]
command = ["echo", "up"]
[program.api.hooks.pre_stop]
sleep = "5s"
[program.api.hooks.post_stop]
command = ["sh", "-c", "echo exit $SUPERVISE_EXIT_CODE"]

[program.migrate]
command = ["migrate", "up"]
restart = "never"
dir = "/srv/migrations"

[program.proxy]
command = ["proxy", "--listen", "9090"]
sidecar = true
[program.proxy.probes.startup]
tcp = 9090

[program.reporter]
command = ["report"]
restart = "on-failure"
dir = "reports"
`

// --mode pod of fidelityConfig: the API takes the Pod (it has a
// container), the long-running on-failure server is that container and
// not an init container that would block the others forever, the
// one-shot runs first, the sidecar is a native sidecar, and no container
// runs in the exporting machine's directory unless dir said so.
func TestKubernetesExportPodFidelity(t *testing.T) {
	dir := t.TempDir()
	cfg, err := config.Parse(filepath.Join(dir, "supervise.toml"), []byte(fidelityConfig))
	if err != nil {
		t.Fatal(err)
	}
	out, warns, err := export.Kubernetes(cfg, export.KubernetesOptions{Image: "shop:2", Name: "shop", Pod: true})
	if err != nil {
		t.Fatal(err)
	}
	pod, ok := decodeStrict(t, out)[0].(*corev1.Pod)
	if !ok {
		t.Fatal("first object is not a Pod")
	}
	if len(pod.Spec.Containers) == 0 {
		t.Fatalf("a Pod without containers, which the API rejects:\n%s", out)
	}
	kinds := map[string]string{}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			kinds[c.Name] = "sidecar"
		} else {
			kinds[c.Name] = "init"
		}
	}
	for _, c := range pod.Spec.Containers {
		kinds[c.Name] = "container"
	}
	want := map[string]string{"api": "container", "reporter": "container", "migrate": "init", "proxy": "sidecar"}
	if !maps.Equal(kinds, want) {
		t.Errorf("programs became %v, want %v", kinds, want)
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == "api" && (c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil || c.Lifecycle.PreStop.Sleep.Seconds != 5) {
			t.Errorf("api: pre_stop sleep 5s is not the kubelet's sleep action: %+v", c.Lifecycle)
		}
	}
	if pod.Spec.RestartPolicy != corev1.RestartPolicyOnFailure {
		t.Errorf("Pod restartPolicy %q, want OnFailure (every container's restart)", pod.Spec.RestartPolicy)
	}
	for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
		switch {
		case c.Name == "migrate" && c.WorkingDir != "/srv/migrations":
			t.Errorf("migrate: workingDir %q, want its explicit dir", c.WorkingDir)
		case c.Name != "migrate" && c.Name != "reporter" && c.WorkingDir != "":
			t.Errorf("%s: workingDir %q from the exporting machine, want the image's", c.Name, c.WorkingDir)
		case strings.HasPrefix(c.WorkingDir, dir) && c.Name != "reporter":
			t.Errorf("%s: workingDir %q is the exporting machine's", c.Name, c.WorkingDir)
		}
	}
	keys := map[string]bool{}
	for _, w := range warns {
		keys[w.Program+" "+w.Key] = true
	}
	if !keys["reporter dir"] {
		t.Errorf("no warning for a dir relative to the exporting machine's config: %v", warns)
	}
	if keys["api dir"] || keys["migrate dir"] {
		t.Errorf("a warning about a dir that was not relative: %v", warns)
	}

	// The same config as workloads: no workingDir from this machine either.
	out, _, err = export.Kubernetes(cfg, export.KubernetesOptions{Image: "shop:2", Name: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range decodeStrict(t, out) {
		var spec *corev1.PodSpec
		switch x := o.(type) {
		case *appsv1.Deployment:
			spec = &x.Spec.Template.Spec
		case *batchv1.Job:
			spec = &x.Spec.Template.Spec
		default:
			continue
		}
		for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
			if c.WorkingDir == dir {
				t.Errorf("%s: workingDir %q is the exporting machine's", c.Name, c.WorkingDir)
			}
		}
	}
}
