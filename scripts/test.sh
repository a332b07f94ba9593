#!/usr/bin/env bash
# Runs every test of the project: vet, the race detector over all packages,
# and the conformance module against client-go.
set -euo pipefail
cd "$(dirname "$0")/.."
# Tools the tests compare with, from Debian: promtool (package prometheus)
# checks the /metrics output; foreman (ruby-foreman) is the reference for
# .env files; nginx fronts the zero-downtime rollout test; systemd
# (systemd-analyze verify, and systemd --test, which prints the units as it
# parsed them) reads the exported units back; chromium (headless) loads
# the web console in the integration tests.
need() { # need COMMAND PACKAGE
	command -v "$1" >/dev/null && return
	if [ "$(id -u)" = 0 ]; then
		export DEBIAN_FRONTEND=noninteractive
		apt-get install -y --no-install-recommends "$2" >/dev/null ||
			{ apt-get update >/dev/null && apt-get install -y --no-install-recommends "$2" >/dev/null; }
	else
		echo "$1 is missing: apt-get install $2" >&2
		exit 1
	fi
}
need promtool prometheus
need foreman ruby-foreman
need systemd-analyze systemd
PATH=$PATH:/usr/sbin need nginx nginx
need chromium chromium
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
	echo "not gofmt-formatted:" >&2
	echo "$unformatted" >&2
	exit 1
fi
go vet ./...
# The packages without Linux-only parts must keep building elsewhere, so the
# config checker and the client work on a developer's laptop.
GOOS=darwin go build ./...
GOOS=darwin go vet ./backoff/... ./clock/... ./internal/... ./config/... ./ctl/... ./hooks/... ./logs/... ./notify/... ./probe/... ./supervisor/... ./watch/...
go test -race -count=1 -timeout 30m ./...
# proc's start tests again with every program forked by the spawner (used
# in production only past 4,096 descriptors).
PROC_TEST_SPAWNER=always go test -race -count=1 -timeout 30m ./proc/
(cd integration/conformance && go test -race -count=1 ./...)
