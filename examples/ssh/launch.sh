#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Starts one slotrun per host over ssh, each with its node rank and all with
# one job secret, and waits for the job.
#
#   examples/ssh/launch.sh HOST0,HOST1,... [SLOTRUN_OPTION...] -- COMMAND [ARGS...]
#   examples/ssh/launch.sh node0,node1 --slots 8 -- python3 train.py --epochs 10
#
# HOST0 is the chief.  A host may be user@host (the address slotrun is told
# is the part after @).  On host i this runs, in a terminal (ssh -tt):
#   SLOTRUN_JOB_SECRET=... slotrun --nnodes N --node-rank i --addrs HOSTS OPTIONS -- COMMAND
# and every slotrun finds the interface that routes to the chief.
#
# Ctrl-C (or SIGTERM to this script) stops the job on every host: the chief's
# slotrun gets a Ctrl-C from its terminal, which stops it as SIGINT does, and
# the job plane stops every other node the same way (SIGINT to every worker,
# SIGKILL after --grace).  A second Ctrl-C kills at once.  (One host is told,
# not each: a SIGINT of its own and the chief's would be two on one node.)
# The exit status is the job's, which every node exits with (255: ssh failed).
#
# Environment: SSH, the ssh command (default "ssh"; e.g. "ssh -F my_config");
# SLOTRUN, slotrun on the hosts (default "slotrun" on their PATH);
# SLOTRUN_JOB_SECRET, the secret (default: 16 fresh random bytes).  The
# secret is on the remote command line, so the hosts' users can see it with
# ps; where that matters, give every host a --secret-file instead.
set -euo pipefail

usage() {
	echo "usage: $0 HOST0,HOST1,... [SLOTRUN_OPTION...] -- COMMAND [ARGS...]" >&2
	exit 2
}

[ $# -ge 1 ] && [ -n "$1" ] || usage
IFS=, read -r -a hosts <<<"$1"
shift
opts=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do
	opts+=("$1")
	shift
done
[ $# -ge 2 ] || usage
shift

addrs=()
for h in "${hosts[@]}"; do
	addrs+=("${h#*@}")
done
addr_list=$(IFS=,; echo "${addrs[*]}")
read -r -a ssh <<<"${SSH:-ssh}"
secret=${SLOTRUN_JOB_SECRET:-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')}

# Each ssh reads its terminal's input from a FIFO we hold open: a Ctrl-C is
# the byte 0x03 written to it.  ssh runs in the background, so it ignores the
# Ctrl-C of our own terminal (bash gives background commands SIGINT ignored)
# and lives on to pass ours along.
fifos=$(mktemp -d)
trap 'rm -rf "$fifos"' EXIT
pids=()
fds=()
for i in "${!hosts[@]}"; do
	mkfifo "$fifos/$i"
	remote=$(printf '%q ' env "SLOTRUN_JOB_SECRET=$secret" "${SLOTRUN:-slotrun}" --nnodes "${#hosts[@]}" \
		--node-rank "$i" --addrs "$addr_list" ${opts[@]+"${opts[@]}"} -- "$@")
	"${ssh[@]}" -tt "${hosts[$i]}" "$remote" <"$fifos/$i" &
	pids+=($!)
	exec {fd}>"$fifos/$i"
	fds+=("$fd")
done

# The Ctrl-C goes to the first host still there, the chief unless its ssh
# has gone (a lost chief is found by the others on their own).
interrupt() {
	for i in "${!pids[@]}"; do
		if kill -0 "${pids[$i]}" 2>/dev/null; then
			printf '\003' >&"${fds[$i]}" 2>/dev/null || true
			return
		fi
	done
}
trap interrupt INT TERM

status=0
for p in "${pids[@]}"; do
	# a trapped signal ends `wait` early: wait again until ssh has exited
	while :; do
		rc=0
		wait "$p" || rc=$?
		kill -0 "$p" 2>/dev/null || break
	done
	[ "$status" -ne 0 ] || status=$rc
done
exit "$status"
