#!/usr/bin/env bash
# Runs every test of the project: vet, the race detector over all packages,
# and the conformance module against client-go.
set -euo pipefail
cd "$(dirname "$0")/.."
# promtool (Debian's prometheus package) checks the /metrics output.
if ! command -v promtool >/dev/null; then
	if [ "$(id -u)" = 0 ]; then
		export DEBIAN_FRONTEND=noninteractive
		apt-get install -y --no-install-recommends prometheus >/dev/null ||
			{ apt-get update >/dev/null && apt-get install -y --no-install-recommends prometheus >/dev/null; }
	else
		echo "promtool is missing: apt-get install prometheus" >&2
		exit 1
	fi
fi
go vet ./...
# The packages without Linux-only parts must keep building elsewhere, so the
# config checker and the client work on a developer's laptop.
GOOS=darwin go build ./...
GOOS=darwin go vet ./backoff/... ./clock/... ./internal/... ./config/... ./ctl/... ./hooks/... ./logs/... ./notify/... ./probe/... ./supervisor/... ./watch/...
go test -race -count=1 -timeout 30m ./...
(cd integration/conformance && go test -race -count=1 ./...)
