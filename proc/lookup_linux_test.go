package proc

import (
	"testing"

	"golang.org/x/sys/unix"
)

// The namespace and rlimit names resolve to their constants, and nothing
// else resolves.
func TestNamespaceFlag(t *testing.T) {
	for ns, want := range map[Namespace]uintptr{
		NamespacePID: unix.CLONE_NEWPID, NamespaceMount: unix.CLONE_NEWNS, NamespaceUTS: unix.CLONE_NEWUTS,
		NamespaceIPC: unix.CLONE_NEWIPC, NamespaceNet: unix.CLONE_NEWNET, NamespaceUser: unix.CLONE_NEWUSER,
	} {
		if got, ok := namespaceFlag(ns); !ok || got != want {
			t.Errorf("namespaceFlag(%q) = %#x, %v; want %#x", ns, got, ok, want)
		}
	}
	if _, ok := namespaceFlag("cgroup"); ok {
		t.Error(`namespaceFlag("cgroup") is known`)
	}
}

func TestRlimitResource(t *testing.T) {
	for name, want := range map[string]int{
		"as": unix.RLIMIT_AS, "core": unix.RLIMIT_CORE, "cpu": unix.RLIMIT_CPU,
		"data": unix.RLIMIT_DATA, "fsize": unix.RLIMIT_FSIZE, "locks": unix.RLIMIT_LOCKS,
		"memlock": unix.RLIMIT_MEMLOCK, "msgqueue": unix.RLIMIT_MSGQUEUE, "nice": unix.RLIMIT_NICE,
		"nofile": unix.RLIMIT_NOFILE, "nproc": unix.RLIMIT_NPROC, "rss": unix.RLIMIT_RSS,
		"rtprio": unix.RLIMIT_RTPRIO, "rttime": unix.RLIMIT_RTTIME,
		"sigpending": unix.RLIMIT_SIGPENDING, "stack": unix.RLIMIT_STACK,
	} {
		if got, ok := rlimitResource(name); !ok || got != want {
			t.Errorf("rlimitResource(%q) = %d, %v; want %d", name, got, ok, want)
		}
	}
	for _, bad := range []string{"", "NOFILE", "rlimit_nofile", "files"} {
		if _, ok := rlimitResource(bad); ok {
			t.Errorf("rlimitResource(%q) is known", bad)
		}
	}
}
