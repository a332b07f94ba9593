#!/usr/bin/env bash
# Runs proc's cgroup v2 tests in a VM whose kernel has cgroup v2 with the
# memory, cpu and pids controllers (the CI host is v1). qemu TCG (no KVM
# needed) boots Debian's kernel with an initramfs: busybox, and the proc
# test binary (static, CGO_ENABLED=0). Its /init mounts cgroup2, enables
# the controllers, runs the tests and prints "V2VM RESULT: <code>" on the
# serial console, which this script turns into its exit code.
#
#   proc/testdata/v2vm.sh [go test -run regexp]
#
# Needs root only for apt-get (qemu-system-x86, busybox-static) and the
# kernel package download; nothing is installed into the host otherwise.
set -euo pipefail
cd "$(dirname "$0")/../.."
RUN=${1:-'TestV2|TestCgroupV2|TestOOMKilled|TestPidsMax|TestCPUMax|TestDeleteSandboxKillsDaemons|TestExecInsideSandbox|TestStopIgnoringTERM|TestStubPlacement|TestPidMount|TestUser'}
CACHE=${V2VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/supervise-v2vm}
mkdir -p "$CACHE"

need() { command -v "$1" >/dev/null 2>&1; }
if ! need qemu-system-x86_64 || [ ! -x /bin/busybox ]; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq qemu-system-x86 busybox-static >/dev/null
fi

# Debian's current kernel, extracted once into the cache.
if ! ls "$CACHE"/vmlinuz-* >/dev/null 2>&1; then
	pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-/ {print $2; exit}')
	if [ -z "$pkg" ]; then
		apt-get update -qq
		pkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-/ {print $2; exit}')
	fi
	(cd "$CACHE" && apt-get download -qq "$pkg")
	dpkg-deb --fsys-tarfile "$CACHE"/"$pkg"_*.deb | tar -x -C "$CACHE" --wildcards './boot/vmlinuz-*'
	mv "$CACHE"/boot/vmlinuz-* "$CACHE"/ && rm -rf "$CACHE"/boot "$CACHE"/*.deb
fi
KERNEL=$(ls "$CACHE"/vmlinuz-* | head -1)

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
ROOT=$WORK/root
mkdir -p "$ROOT"/{bin,sbin,usr/bin,usr/sbin,etc,proc,sys,dev,tmp,root}
CGO_ENABLED=0 go test -c -o "$ROOT/proc.test" ./proc
cp /bin/busybox "$ROOT/bin/busybox"
for app in $(/bin/busybox --list); do
	[ "$app" = busybox ] || ln -sf busybox "$ROOT/bin/$app"
done
for d in usr/bin usr/sbin sbin; do
	for app in sh sleep true cat dd id setsid grep tr hostname; do ln -sf /bin/busybox "$ROOT/$d/$app"; done
done
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$ROOT/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$ROOT/etc/group"
cat >"$ROOT/init" <<INIT
#!/bin/sh
export PATH=/bin:/usr/bin:/sbin:/usr/sbin HOME=/root
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
mount -t cgroup2 cgroup2 /sys/fs/cgroup
echo "+cpu +memory +pids" > /sys/fs/cgroup/cgroup.subtree_control
echo "V2VM controllers: \$(cat /sys/fs/cgroup/cgroup.subtree_control)"
ip link set lo up 2>/dev/null
cd /tmp
/proc.test -test.v -test.count=1 -test.timeout=20m -test.run '$RUN' 2>&1
echo "V2VM RESULT: \$?"
poweroff -f
INIT
chmod +x "$ROOT/init"
(cd "$ROOT" && find . | cpio -o -H newc --quiet | gzip -1) >"$WORK/initramfs.gz"

LOG=$WORK/console.log
echo "v2vm: booting $(basename "$KERNEL") under qemu (TCG), tests: $RUN"
timeout 1800 qemu-system-x86_64 -machine q35 -cpu max -smp 2 -m 2048 -nographic -no-reboot \
	-kernel "$KERNEL" -initrd "$WORK/initramfs.gz" \
	-append "console=ttyS0 panic=-1 quiet loglevel=3" </dev/null | tee "$LOG" || true
code=$(sed -n 's/.*V2VM RESULT: \([0-9]*\).*/\1/p' "$LOG" | tail -1)
if [ -z "$code" ]; then
	echo "v2vm: the VM gave no result" >&2
	exit 1
fi
exit "$code"
