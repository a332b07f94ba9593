// Package metrics serves the supervisor's figures over HTTP, read-only:
// /metrics in the Prometheus text exposition format (version 0.0.4),
// /healthz for the liveness of the supervisor's own loop, and /readyz for
// the readiness of the programs it runs. It never offers a control verb:
// those stay on the control socket, with its peer-credential check.
//
// The encoder and the process figures are written here on the standard
// library rather than taken from prometheus/client_golang: the output is a
// few families rebuilt from a snapshot at each scrape, which needs neither
// a registry nor collectors. Measured when this was chosen (CGO_ENABLED=0,
// 500 interleaved runs of `supervise exec -- /bin/true`): client_golang
// v1.25 added 3.3 MB to the binary and 1.0-1.1 ms to that start-up (its
// package initialisation runs in every process, exec included); this
// package added 0.14 MB and 0.08 ms.
//
// The supervisor provides a [Snapshot] through a [Source]; this package
// knows nothing of how the figures are made.
package metrics
