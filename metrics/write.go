package metrics

// Build describes the running binary for supervise_build_info.
type Build struct {
	Version   string
	GoVersion string
}

// appendSnapshot appends every family of s.
func appendSnapshot(e *encoder, s Snapshot, build Build) {
	e.family("supervise_build_info", "gauge", "Always 1; the labels say which supervise runs.")
	e.sample("supervise_build_info", 1, "version", build.Version, "goversion", build.GoVersion)

	appendPrograms(e, s)
	appendQueue(e, s.Queue)

	e.family("supervise_reloads_total", "counter", "Config reloads, by result: ok (applied) or failed (refused; the running config stayed).")
	e.sample("supervise_reloads_total", float64(s.Reloads), "result", "ok")
	e.sample("supervise_reloads_total", float64(s.ReloadFailures), "result", "failed")
	e.family("supervise_illegal_transitions_total", "counter", "State changes of programs the lifecycle refused as illegal (a bug if not 0).")
	e.sample("supervise_illegal_transitions_total", float64(s.IllegalTransitions))
}

func appendPrograms(e *encoder, s Snapshot) {
	for _, f := range programFamilies {
		e.family(f.name, f.typ, f.help)
		for i := range s.Programs {
			f.samples(&s.Programs[i], s.States, programSampler{e: e, name: f.name, p: &s.Programs[i]})
		}
	}
}

// programFamily is a metric family with a sample per program instance.
type programFamily struct {
	name, typ, help string
	// samples adds the instance's samples: none when it has no value.
	samples func(p *Program, states []string, out programSampler)
}

// programSampler adds a sample of one family for one instance, labelled
// with the program and instance and any more label pairs.
type programSampler struct {
	e    *encoder
	name string
	p    *Program
}

func (s programSampler) add(v float64, more ...string) {
	s.e.sample(s.name, v, append([]string{"program", s.p.Program, "instance", s.p.Instance}, more...)...)
}

// programFamilies are written in this order, each for every instance.
var programFamilies = []programFamily{
	{"supervise_program_state", "gauge", "1 for the state the program instance is in, 0 for the others.",
		func(p *Program, states []string, out programSampler) {
			for _, st := range states {
				out.add(b2f(p.State == st), "state", st)
			}
		}},
	{"supervise_program_ready", "gauge", "1 when the instance's current run is ready (passed its readiness check, or has none and runs).",
		func(p *Program, _ []string, out programSampler) { out.add(b2f(p.Ready)) }},
	{"supervise_program_autostart", "gauge", "1 when the instance starts with the supervisor (and counts for /readyz).",
		func(p *Program, _ []string, out programSampler) { out.add(b2f(p.Autostart)) }},
	{"supervise_program_restarts_total", "counter", "Restarts of the instance after an exit, a failed probe or a request.",
		func(p *Program, _ []string, out programSampler) { out.add(float64(p.Restarts)) }},
	{"supervise_program_start_time_seconds", "gauge", "Start of the current run, in seconds since the Unix epoch; absent when none runs.",
		func(p *Program, _ []string, out programSampler) {
			if !p.StartedAt.IsZero() {
				out.add(unixSeconds(p.StartedAt))
			}
		}},
	{"supervise_program_last_exit_code", "gauge", "Exit code of the instance's last run (128+N when signal N ended it, as shells show it); absent before the first exit.",
		func(p *Program, _ []string, out programSampler) {
			if x := p.LastExit; x != nil {
				out.add(float64(x.Code))
			}
		}},
	{"supervise_program_last_exit_reason", "gauge", "1, with the reason the instance's last run ended in the label; absent before the first exit.",
		func(p *Program, _ []string, out programSampler) {
			if x := p.LastExit; x != nil {
				out.add(1, "reason", x.Reason)
			}
		}},
	{"supervise_program_memory_bytes", "gauge", "Memory charged to the instance's cgroup; absent without a cgroup or a running process.",
		func(p *Program, _ []string, out programSampler) {
			if p.Stats {
				out.add(float64(p.MemoryBytes))
			}
		}},
	{"supervise_program_cpu_seconds_total", "counter", "CPU time used in the instance's cgroup in the current run (starts again at 0 with a new run).",
		func(p *Program, _ []string, out programSampler) {
			if p.Stats {
				out.add(p.CPUSeconds)
			}
		}},
	{"supervise_program_oom_kills_total", "counter", "Runs of the instance ended by the OOM killer.",
		func(p *Program, _ []string, out programSampler) { out.add(float64(p.OOMKills)) }},
	{"supervise_program_last_success_time_seconds", "gauge", "End of the last successful run of a scheduled program, in seconds since the Unix epoch; absent before one.",
		func(p *Program, _ []string, out programSampler) {
			if p.Scheduled && !p.LastSuccess.IsZero() {
				out.add(unixSeconds(p.LastSuccess))
			}
		}},
	{"supervise_program_next_run_time_seconds", "gauge", "When the next run of a scheduled program is due, in seconds since the Unix epoch; absent while it is stopped.",
		func(p *Program, _ []string, out programSampler) {
			if p.Scheduled && !p.NextRun.IsZero() {
				out.add(unixSeconds(p.NextRun))
			}
		}},
	{"supervise_program_probe_success", "gauge", "1 when the last run of the probe succeeded, 0 when it failed; by probe (startup, readiness, liveness).",
		func(p *Program, _ []string, out programSampler) {
			for _, pr := range p.Probes {
				out.add(b2f(pr.OK), "probe", pr.Kind)
			}
		}},
	{"supervise_program_probe_duration_seconds", "gauge", "How long the last run of the probe took.",
		func(p *Program, _ []string, out programSampler) {
			for _, pr := range p.Probes {
				out.add(pr.Duration.Seconds(), "probe", pr.Kind)
			}
		}},
}

// appendQueue writes the work queue's figures under the names of
// client-go's workqueue metrics, which dashboards know.
func appendQueue(e *encoder, q Queue) {
	n := []string{"name", q.Name}
	e.family("workqueue_depth", "gauge", "Keys ready in the work queue, waiting for a worker.")
	e.sample("workqueue_depth", float64(q.Depth), n...)
	e.family("workqueue_adds_total", "counter", "Keys that became pending in the work queue (an add of a key already pending is not counted).")
	e.sample("workqueue_adds_total", float64(q.Adds), n...)
	e.family("workqueue_retries_total", "counter", "Delayed and rate-limited adds to the work queue.")
	e.sample("workqueue_retries_total", float64(q.Retries), n...)
	e.family("workqueue_queue_duration_seconds", "histogram", "Time a key waited ready in the work queue before a worker took it.")
	e.histogram("workqueue_queue_duration_seconds", q.QueueTime, n...)
	e.family("workqueue_work_duration_seconds", "histogram", "Time a worker held a key.")
	e.histogram("workqueue_work_duration_seconds", q.WorkTime, n...)
	e.family("workqueue_unfinished_work_seconds", "gauge", "Time the keys held by workers now have been held, summed; it grows at the rate of the workers stuck.")
	e.sample("workqueue_unfinished_work_seconds", q.UnfinishedWork.Seconds(), n...)
	e.family("workqueue_longest_running_processor_seconds", "gauge", "Time the key held longest by a worker now has been held.")
	e.sample("workqueue_longest_running_processor_seconds", q.LongestRunning.Seconds(), n...)
}
