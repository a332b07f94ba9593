// Package version holds the version of this build, for what the binary
// says about itself: `--version`, the build_info metric and the
// User-Agent of probes and hooks. Release builds set it with
// -ldflags "-X github.com/supervise-dev/supervise/internal/version.Version=v1.2.3".
package version

// Version is "dev" unless the linker set it.
var Version = "dev"
