// Package consolepath knows the paths that name a process's own standard
// output and error: a container's way of saying "the console"
// (supervisord's stdout_logfile=/dev/stdout idiom).
package consolepath

import "path/filepath"

// FD returns 1 when path names the process's own stdout, 2 for its
// stderr, and 0 for any other path.
func FD(path string) int {
	if !filepath.IsAbs(path) {
		return 0
	}
	switch filepath.Clean(path) {
	case "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1":
		return 1
	case "/dev/stderr", "/dev/fd/2", "/proc/self/fd/2":
		return 2
	}
	return 0
}
