#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Starts one slotrun per host over ssh, each with its node rank and all with
# one job secret, and waits for the job.
#
#   launch.sh HOST0,HOST1,... [SLOTRUN_OPTION...] -- COMMAND [ARGS...]
#   launch.sh node0,node1 --slots 8 -- python3 train.py --epochs 10
#
# Installed as $datadir/slotrun/examples/ssh/launch.sh.  HOST0 is the chief.
# A host is whatever ssh takes (an ssh_config alias, user@host); slotrun is
# told the address ssh connects to, its HostName as `ssh -G` gives it, which
# every host must reach under that name.  On host i this runs, in a terminal
# (ssh -tt) set to plain LF output and no echo:
#   SLOTRUN_JOB_SECRET=... slotrun --nnodes N --node-rank i --addrs ADDRS OPTIONS -- COMMAND
# and every slotrun finds the interface that routes to the chief.  The
# terminal carries the hosts' stdout and stderr both, to our stdout.
#
# Ctrl-C (or SIGTERM to this script) stops the job on every host: the chief's
# slotrun gets a Ctrl-C from its terminal, which stops it as SIGINT does, and
# the job plane stops every other node the same way (SIGINT to every worker,
# SIGKILL after --grace).  A second Ctrl-C kills at once.  (One host is told,
# not each: a SIGINT of its own and the chief's would be two on one node.)
# The exit status is the job's, which every node exits with (130 after a
# Ctrl-C or a SIGTERM: the hosts were sent SIGINT); 255 when ssh failed to
# a host, which stops the others.  Needs bash 5.1 (wait -p).
# Should this script die without a word, each host's slotrun stops the job
# once its ssh session ends.
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
read -r -a ssh <<<"${SSH:-ssh}"

# The address ssh would connect to: an alias's HostName, user@ dropped.
addrs=()
for h in "${hosts[@]}"; do
	a=$("${ssh[@]}" -G "$h" 2>/dev/null | awk '$1 == "hostname" { print $2; exit }') || a=
	if [ -z "$a" ]; then
		echo "$0: cannot tell the address of host '$h' (ssh -G $h): check the name and your ssh_config" >&2
		exit 2
	fi
	addrs+=("$a")
done
addr_list=$(IFS=,; echo "${addrs[*]}")
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
	# (the remote terminal would end lines in CR LF and echo the 0x03 as ^C)
	remote="stty -onlcr -echo 2>/dev/null; exec $(printf '%q ' env "SLOTRUN_JOB_SECRET=$secret" \
		"${SLOTRUN:-slotrun}" --nnodes "${#hosts[@]}" --node-rank "$i" --addrs "$addr_list" \
		${opts[@]+"${opts[@]}"} -- "$@")"
	"${ssh[@]}" -tt "${hosts[$i]}" "$remote" <"$fifos/$i" &
	pids+=($!)
	exec {fd}>"$fifos/$i"
	fds+=("$fd")
done

# The Ctrl-C goes to the first host still there, the chief unless its ssh
# has gone (a lost chief is found by the others on their own).
interrupted=0
interrupt() {
	interrupted=1
	for i in "${!pids[@]}"; do
		if kill -0 "${pids[$i]}" 2>/dev/null; then
			printf '\003' >&"${fds[$i]}" 2>/dev/null || true
			# (a bare return in a trap gives the status of what it
			# interrupted, wait's 128+N, and set -e would exit on it)
			return 0
		fi
	done
}
trap interrupt INT TERM

# Our status is the hosts': the first non-zero one to come.  An ssh that
# failed (255: no connection, a host that does not resolve) would leave the
# others waiting out --join-timeout for its node: it stops them as a Ctrl-C
# does.  A trapped signal ends `wait` early with no child named: wait again.
status=0
running=("${pids[@]}")
while [ "${#running[@]}" -gt 0 ]; do
	interrupted=0
	done_pid=
	rc=0
	wait -n -p done_pid "${running[@]}" || rc=$?
	if [ -z "${done_pid:-}" ]; then
		[ "$interrupted" = 1 ] || break # (no child left: not expected)
		continue
	fi
	for i in "${!running[@]}"; do
		[ "${running[$i]}" != "$done_pid" ] || unset 'running[i]'
	done
	[ "$status" -ne 0 ] || status=$rc
	if [ "$rc" -eq 255 ] && [ "${#running[@]}" -gt 0 ]; then
		interrupt
	fi
done
exit "$status"
