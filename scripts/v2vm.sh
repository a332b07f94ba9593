#!/usr/bin/env bash
# Runs the cgroup v2 tests in a VM. The CI machine has cgroup v1 controllers
# only, and bound controllers cannot move to a cgroup2 mount while their v1
# hierarchy lives, so v2 with memory/pids/cpu is covered here: a Debian
# kernel booted under qemu (TCG, no KVM needed) with an initramfs whose init
# (integration/v2vm/init) runs static test binaries as root in a pure v2
# system and reports PASS/FAIL per binary on the serial console.
#
# Installs what it needs if missing (qemu-system-x86, busybox-static, cpio;
# the kernel via `apt-get download`, cached). Exits non-zero unless every
# binary printed PASS.
#
# Knobs (environment):
#   V2VM_PKGS          packages whose tests run in the VM (a missing package or
#                      one without tests is skipped, a build failure fails)
#   V2VM_KERNEL_PKG    Debian kernel package (default: what linux-image-amd64
#                      depends on)
#   V2VM_TIMEOUT       hard limit for the VM run, seconds (default 900)
#   V2VM_TEST_TIMEOUT  -test.timeout of each binary (default 5m; they take under
#                      a minute); the init reports a binary still running a
#                      minute later with every task's kernel stack, and kills it
#   V2VM_RUN           -test.run filter (default: all)
#   V2VM_SHORT         1 (default) passes -test.short: the VM emulates its CPU
#                      (TCG, several times slower than the host), so scale
#                      tests shrink there; the host run keeps their full size
#   V2VM_MEM, V2VM_SMP VM memory in MiB (default 1024) and CPUs (default 2)
#   V2VM_FROZEN        seconds without the guest's heartbeat after which it
#                      counts as frozen, is killed and booted once more
#                      (default 120)
#   V2VM_CACHE         kernel cache and serial log (default ~/.cache/supervise-v2vm)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH

V2VM_PKGS=${V2VM_PKGS:-"./proc/cgroups ./proc"}
V2VM_TIMEOUT=${V2VM_TIMEOUT:-900}
V2VM_TEST_TIMEOUT=${V2VM_TEST_TIMEOUT:-5m}
V2VM_RUN=${V2VM_RUN:-}
V2VM_SHORT=${V2VM_SHORT:-1}
V2VM_MEM=${V2VM_MEM:-1024}
V2VM_SMP=${V2VM_SMP:-2}
V2VM_FROZEN=${V2VM_FROZEN:-120}
V2VM_CACHE=${V2VM_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/supervise-v2vm}

log() { echo "v2vm: $*" >&2; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

t0=$(now)
mkdir -p "$V2VM_CACHE"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# 1. Tools.
apt_updated=
apt_update() {
	if [ -z "$apt_updated" ]; then
		apt-get update -qq
		apt_updated=1
	fi
}
need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
dpkg -s busybox-static >/dev/null 2>&1 || need+=(busybox-static)
command -v cpio >/dev/null || need+=(cpio)
if [ ${#need[@]} -gt 0 ]; then
	log "installing ${need[*]}"
	apt_update
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
t_tools=$(since "$t0")

# 2. Kernel.
t1=$(now)
kpkg=${V2VM_KERNEL_PKG:-}
if [ -z "$kpkg" ]; then
	kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }')
	if [ -z "$kpkg" ]; then
		apt_update
		kpkg=$(apt-cache depends linux-image-amd64 | awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }')
	fi
fi
[ -n "$kpkg" ] || { log "no Debian kernel package found (apt-cache depends linux-image-amd64)"; exit 1; }
vmlinuz=$V2VM_CACHE/$kpkg.vmlinuz
if [ ! -s "$vmlinuz" ]; then
	log "downloading $kpkg"
	mkdir -p "$work/deb"
	if ! (cd "$work/deb" && apt-get download -qq "$kpkg" 2>/dev/null); then
		apt_update
		(cd "$work/deb" && apt-get download -qq "$kpkg")
	fi
	dpkg-deb -x "$work"/deb/*.deb "$work/kernel"
	cp "$work"/kernel/boot/vmlinuz-* "$vmlinuz.tmp"
	mv "$vmlinuz.tmp" "$vmlinuz"
fi
t_kernel=$(since "$t1")

# 3. Test binaries and the init, static.
t2=$(now)
root=$work/root
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,dev,proc,sys,tmp,etc,root,tests}
CGO_ENABLED=0 go build -trimpath -o "$root/init" ./integration/v2vm/init
names=()
for pkg in $V2VM_PKGS; do
	if [ ! -d "$pkg" ]; then
		log "skipping $pkg: no such package"
		continue
	fi
	if ! compgen -G "$pkg/*_test.go" >/dev/null; then
		log "skipping $pkg: no tests"
		continue
	fi
	name=$(echo "${pkg#./}" | tr / _)
	mkdir -p "$root/tests/$name"
	CGO_ENABLED=0 go test -c -trimpath -o "$root/tests/$name/$name.test" "$pkg"
	if [ -d "$pkg/testdata" ]; then
		cp -r "$pkg/testdata" "$root/tests/$name/"
	fi
	names+=("$name")
done
[ ${#names[@]} -gt 0 ] || { log "no test binary to run (V2VM_PKGS=$V2VM_PKGS)"; exit 1; }
t_build=$(since "$t2")

# 4. Initramfs: busybox for /bin/sh and the coreutils the tests call.
t3=$(now)
cp /bin/busybox "$root/bin/busybox"
for applet in $(/bin/busybox --list); do
	[ "$applet" = busybox ] || [ -e "$root/bin/$applet" ] || ln -s busybox "$root/bin/$applet"
done
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
# The kernel opens /dev/console for init before init mounts devtmpfs.
mknod -m 600 "$root/dev/console" c 5 1 2>/dev/null || true
(cd "$root" && find . -print0 | cpio --null -o -H newc -R 0:0 --quiet) >"$work/initramfs.cpio"
t_initramfs=$(since "$t3")
log "kernel $kpkg, tests: ${names[*]}, initramfs $(du -m "$work/initramfs.cpio" | cut -f1) MiB"

# 5. Boot. The serial console is the log; timeout is the hard stop. The
# init writes a heartbeat to the second port every 5 s from a timer; when it
# stops for V2VM_FROZEN seconds the guest's clock or CPUs have stopped (an
# emulator stall: no timeout inside the guest can fire then), which is told
# apart from a slow or hung test (those keep the heartbeat going and meet
# the guest's own timeouts). A frozen guest is killed, reported with its
# last heartbeat, and booted once more; a second freeze fails the run.
t4=$(now)
serial=$V2VM_CACHE/serial.log
append="console=ttyS0 panic=-1 quiet loglevel=4 rdinit=/init v2vm.timeout=$V2VM_TEST_TIMEOUT"
[ -z "$V2VM_RUN" ] || append="$append v2vm.run=$V2VM_RUN"
[ "$V2VM_SHORT" != 1 ] || append="$append v2vm.short=1"
boot() {
	local beat=$work/heartbeat
	: >"$beat"
	{
		timeout --kill-after=10 "$V2VM_TIMEOUT" qemu-system-x86_64 \
			-accel tcg -cpu max -smp "$V2VM_SMP" -m "$V2VM_MEM" \
			-display none -monitor none -serial stdio -serial "file:$beat" -nic none -no-reboot \
			-kernel "$vmlinuz" -initrd "$work/initramfs.cpio" -append "$append" \
			</dev/null 2>&1
		echo $? >"$work/qemu_rc"
	} | tee "$serial" &
	local pipe=$! last_size=-1 last_change=$SECONDS size
	frozen=
	while kill -0 "$pipe" 2>/dev/null; do
		sleep 2
		size=$(stat -c %s "$beat" 2>/dev/null || echo 0)
		if grep -q '^V2VM DONE' "$serial" 2>/dev/null; then
			last_change=$SECONDS # powering off: no more heartbeats
		elif [ "$size" != "$last_size" ]; then
			last_size=$size last_change=$SECONDS
		elif [ $((SECONDS - last_change)) -ge "$V2VM_FROZEN" ]; then
			frozen="no heartbeat for ${V2VM_FROZEN}s; last: $(tail -n 1 "$beat" | tr -d '\r' || true)"
			pkill -f -- "-serial file:$beat" || true
			break
		fi
	done
	wait "$pipe"
	qemu_rc=$(cat "$work/qemu_rc" 2>/dev/null || echo '?')
}
set +e
attempt=1
while :; do
	boot
	[ -n "$frozen" ] || break
	log "the guest froze (attempt $attempt): $frozen"
	cp "$serial" "$serial.frozen$attempt"
	[ "$attempt" -lt 2 ] || break
	attempt=$((attempt + 1))
	log "booting it once more; the frozen run's console is in $serial.frozen$((attempt - 1))"
done
set -e
t_vm=$(since "$t4")

# 6. Verdict: every binary must have printed PASS.
tr -d '\r' <"$serial" >"$serial.clean" && mv "$serial.clean" "$serial"
ok=1
for name in "${names[@]}"; do
	if grep -q "^V2VM PASS $name " "$serial"; then
		log "PASS $name"
	else
		log "FAIL $name: $(grep "^V2VM FAIL $name" "$serial" || echo 'no PASS line')"
		ok=
	fi
done
[ -z "$frozen" ] || log "the guest froze twice; the second time: $frozen"
grep -q '^V2VM DONE' "$serial" || { log "the VM did not finish (qemu exit $qemu_rc; 124 = timeout after ${V2VM_TIMEOUT}s)"; ok=; }
log "took $(since "$t0")s: tools ${t_tools}s, kernel ${t_kernel}s, build ${t_build}s, initramfs ${t_initramfs}s, boot+tests ${t_vm}s; serial log $serial"
[ -n "$ok" ] || exit 1
