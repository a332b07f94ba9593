#!/usr/bin/env bash
# Runs every test of the project: vet, the race detector over all packages,
# and the conformance module against client-go.
set -euo pipefail
cd "$(dirname "$0")/.."
go vet ./...
go test -race -count=1 -timeout 30m ./...
(cd integration/conformance && go test -race -count=1 ./...)
