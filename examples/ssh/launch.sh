#!/usr/bin/env bash
# Starts the same job on every node over ssh.  Usage:
#   examples/ssh/launch.sh node0,node1 python3 train.py
# The first node is the chief.  Every node gets the same SLOTRUN_JOB_SECRET,
# so only this job's ranks can join the rendezvous; slotrun on each node
# finds the interface that routes to the chief.  Ctrl-C stops every node.
set -euo pipefail
nodes=$1
shift
IFS=, read -r -a hosts <<<"$nodes"
secret=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
pids=()
for i in "${!hosts[@]}"; do
	ssh -tt "${hosts[$i]}" "SLOTRUN_JOB_SECRET=$secret" slotrun --nnodes "${#hosts[@]}" \
		--node-rank "$i" --addrs "$nodes" -- "$@" &
	pids+=($!)
done
trap 'kill -INT "${pids[@]}" 2>/dev/null' INT TERM
status=0
for p in "${pids[@]}"; do wait "$p" || status=$?; done
exit "$status"
