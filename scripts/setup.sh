# SPDX-License-Identifier: MIT
# Sourced by scripts/demo and scripts/test: installs what is missing from
# Debian's packages (non-interactively; nothing when all is present), then
# configures and builds into $1 with the meson options that follow (and
# only the ninja targets after --targets, when given).
set -euo pipefail

SLOTRUN_PACKAGES=(meson ninja-build pkg-config gcc libc6-dev musl-tools libevent-dev libhwloc-dev
	libjansson-dev libsodium-dev libdw-dev libcriterion-dev python3 hwloc iproute2 util-linux procps scdoc)

# The tests also run a PyTorch DDP job across namespace nodes (Debian's
# CPU PyTorch, for /usr/bin/python3), check the CPython 3.11 offsets the
# stack collector reads a Python worker's frames with against CPython's own
# headers (python3.11-dev), slotrun under a private one-node Slurm (slurm-wlm with its
# munge; `apt-get install -s` installs them without questions, and Debian
# starts no daemon where policy-rc.d forbids), examples/ssh/launch.sh
# against an sshd in each namespace node (openssh-server), and a job started
# in one pdsh line over those sshds (pdsh), render the man
# pages (man-db), run slotrun and wrap_rank under valgrind, and fuzz the
# parsers (clang's libFuzzer).  Packages go in without their recommends,
# so what a test needs from a recommended package is named here:
# libclang-rt-dev (libFuzzer and clang's sanitizer runtimes, which clang
# only recommends; this name follows Debian's default clang).  The container
# test builds examples/container/Dockerfile with podman (runc as its runtime,
# netavark and aardvark-dns for a network whose names resolve) on a Debian
# base from debootstrap (which only recommends the archive's keyring).  A
# real Prometheus scrapes --metrics-port, and promtool (in the same
# package) checks the exposition.
SLOTRUN_TEST_PACKAGES=(python3-torch python3.11-dev slurm-wlm munge openssh-server pdsh man-db valgrind clang
	libclang-rt-dev podman runc netavark aardvark-dns iptables debootstrap debian-archive-keyring prometheus)

# slotrun_install_missing [EXTRA_PACKAGE...]
slotrun_install_missing() {
	local missing=() p
	for p in "${SLOTRUN_PACKAGES[@]}" "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	echo "installing: ${missing[*]}"
	local sudo=()
	[ "$(id -u)" -eq 0 ] || sudo=(sudo)
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		"${missing[@]}" >/dev/null
}

# slotrun_build DIR [MESON_OPTION...] [--targets NINJA_TARGET...]
slotrun_build() {
	local dir=$1 opts=() targets=()
	shift
	while [ $# -gt 0 ]; do
		if [ "$1" = --targets ]; then
			shift
			targets=("$@")
			break
		fi
		opts+=("$1")
		shift
	done
	local log
	log=$(mktemp)
	# quiet when it works, the whole log when it does not
	if [ -f "$dir/build.ninja" ]; then
		meson configure "$dir" "${opts[@]}" >"$log" 2>&1 || { cat "$log"; rm -f "$log"; return 1; }
	else
		meson setup "$dir" "${opts[@]}" >"$log" 2>&1 || { cat "$log"; rm -f "$log"; return 1; }
	fi
	ninja -C "$dir" "${targets[@]}" >"$log" 2>&1 || { cat "$log"; rm -f "$log"; return 1; }
	rm -f "$log"
}
