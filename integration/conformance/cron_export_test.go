package conformance

import (
	"math/rand"
	"path/filepath"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/export"
	"github.com/supervise-dev/supervise/schedule"
)

// TestKubernetesCronJobDecodes: a scheduled program is a CronJob that
// decodes strictly into batch/v1's type, in both modes.
func TestKubernetesCronJobDecodes(t *testing.T) {
	cfg, err := config.Parse(filepath.Join(t.TempDir(), "supervise.toml"), []byte(`
[program.web]
command = "server"

[program.report]
command = ["report", "--daily"]
schedule = "30 6 * * MON-FRI"
timezone = "Europe/Berlin"
concurrency = "replace"
starting_deadline = "2m"
max_runtime = "10m"

[program.tick]
command = "tick"
schedule = "@every 30s"
restart = "never"
autostart = false

[program.pile]
command = "pile"
schedule = "*/5 * * * *"
concurrency = "allow"
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, pod := range []bool{false, true} {
		out, warns, err := export.Kubernetes(cfg, export.KubernetesOptions{Image: "shop:2", Name: "shop", Pod: pod})
		if err != nil {
			t.Fatal(err)
		}
		crons := map[string]*batchv1.CronJob{}
		for _, o := range decodeStrict(t, out) {
			if c, ok := o.(*batchv1.CronJob); ok {
				crons[c.Name] = c
			}
		}
		r, tick, pile := crons["shop-report"], crons["shop-tick"], crons["shop-pile"]
		if len(crons) != 3 || r == nil || tick == nil || pile == nil {
			t.Fatalf("pod %v: CronJobs %v", pod, crons)
		}
		js := r.Spec.JobTemplate.Spec
		if r.Spec.Schedule != "30 6 * * 1-5" || r.Spec.TimeZone == nil || *r.Spec.TimeZone != "Europe/Berlin" ||
			r.Spec.ConcurrencyPolicy != batchv1.ReplaceConcurrent || r.Spec.StartingDeadlineSeconds == nil || *r.Spec.StartingDeadlineSeconds != 120 ||
			js.ActiveDeadlineSeconds == nil || *js.ActiveDeadlineSeconds != 600 || js.BackoffLimit == nil || *js.BackoffLimit != 6 ||
			js.Template.Spec.RestartPolicy != corev1.RestartPolicyOnFailure || js.Template.Spec.Containers[0].Image != "shop:2" {
			t.Errorf("pod %v: report: %+v", pod, r.Spec)
		}
		if tick.Spec.Schedule != "* * * * *" || tick.Spec.ConcurrencyPolicy != batchv1.ForbidConcurrent || tick.Spec.Suspend == nil || !*tick.Spec.Suspend ||
			*tick.Spec.JobTemplate.Spec.BackoffLimit != 0 || tick.Spec.JobTemplate.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
			t.Errorf("pod %v: tick: %+v", pod, tick.Spec)
		}
		if pile.Spec.ConcurrencyPolicy != batchv1.AllowConcurrent {
			t.Errorf("pod %v: pile: %+v", pod, pile.Spec)
		}
		sub := false
		for _, w := range warns {
			sub = sub || w.Program == "tick" && w.Key == "schedule"
		}
		if !sub {
			t.Errorf("pod %v: no warning that tick's 30s is under a minute: %v", pod, warns)
		}
	}
}

// TestCronJobScheduleMatchesTheController: the CronJob controller parses a
// schedule with robfig/cron's standard parser. For random expressions that
// translate without a warning, its next times are package schedule's.
func TestCronJobScheduleMatchesTheController(t *testing.T) {
	n := 5000
	if testing.Short() {
		n = 500
	}
	compared := 0
	for seed := range n {
		r := rand.New(rand.NewSource(int64(seed)))
		expr := randomExpr(r)
		ours, err := schedule.Parse(expr, time.UTC)
		if err != nil {
			continue // never fires
		}
		text, warns := export.CronJobSchedule(ours)
		if len(warns) > 0 {
			continue
		}
		theirs, err := cron.ParseStandard(text)
		if err != nil {
			t.Fatalf("seed %d: %q → %q, which the controller's parser refuses: %v", seed, expr, text, err)
		}
		from := time.Date(2020+r.Intn(10), time.Month(1+r.Intn(12)), 1+r.Intn(28), r.Intn(24), r.Intn(60), 0, 0, time.UTC)
		a, b := from, from
		for i := range 8 {
			a, b = ours.Next(a), theirs.Next(b)
			if b.IsZero() {
				break
			}
			if !a.Equal(b) {
				t.Fatalf("seed %d: %q → %q, next #%d after %s: schedule %s, controller %s", seed, expr, text, i+1, from.Format(time.RFC3339), a, b)
			}
		}
		compared++
	}
	t.Logf("%d schedules compared", compared)
}
