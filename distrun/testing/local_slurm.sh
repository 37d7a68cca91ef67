#!/usr/bin/env bash
# A real Slurm cluster on this machine, for tests: one munged, one
# slurmctld and N slurmd daemons (`slurmd -N nodeK`), every node on its own
# loopback address 127.0.0.(10+K). Everything lives under DIR; nothing
# outside it is touched, and `stop` leaves no daemon behind.
#
# Node names resolve through nss_wrapper (DIR/hosts), which the printed
# environment preloads, so MASTER_ADDR=node1 reaches 127.0.0.11 the way a
# cluster's DNS would.
#
#   local_slurm.sh start DIR [NODES [OWNER]]
#                                      start, wait until every node is idle,
#                                      print the environment to eval; with
#                                      OWNER (a pid), a detached watcher
#                                      stops the cluster and removes DIR once
#                                      that process is gone, killed or not
#   local_slurm.sh stop DIR            stop every daemon started under DIR
#   local_slurm.sh check               exit 0 if Slurm and munge are installed
#
# Hosts mode: with NETWORK_HOSTS=N and NETWORK_HOST_1..N in the environment
# (network_hosts.h: hosts that are network namespaces) and
# NETWORK_HOSTS_HERE (this machine's address on their management network),
# the nodes are those hosts: slurmd of nidK runs on host K (NodeAddr the
# address its name resolves to there), slurmctld here, and names resolve
# through each host's own hosts file, so no nss_wrapper.
set -euo pipefail

# Ports: slurmctld on BASE, slurmd of nodeK on BASE+K. BASE varies with the
# script's pid so a cluster left over from a crashed run does not collide.
readonly kBasePort=$((17000 + ($$ % 400) * 10))
readonly kNssWrapper=/usr/lib/x86_64-linux-gnu/libnss_wrapper.so

need() { command -v "$1" >/dev/null 2>&1 || { echo "missing: $1" >&2; return 1; }; }

check() {
  local ok=0
  for t in slurmctld slurmd slurmstepd srun scontrol munged mungekey; do
    need "$t" || ok=1
  done
  [[ -e $kNssWrapper ]] || { echo "missing: $kNssWrapper (libnss-wrapper)" >&2; ok=1; }
  return $ok
}

write_config() {
  local dir=$1 nodes=$2
  # Every node has this machine's cores, so that task/affinity binds tasks
  # to CPUs that exist (all nodes share them).
  local cpus
  cpus=$(nproc)
  local last=$((nodes))
  cat >"$dir/slurm.conf" <<EOF
ClusterName=distrun-test
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$kBasePort
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket,cred_expire=10
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
LaunchParameters=use_interactive_step
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/builtin
SchedulerParameters=sched_interval=2
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
InactiveLimit=0
KillWait=5
MinJobAge=300
SlurmctldTimeout=30
SlurmdTimeout=30
EOF
  if [[ -n ${NETWORK_HOSTS:-} ]]; then
    write_hosts_nodes "$dir" "$cpus"
    return
  fi
  for ((k = 1; k <= last; k++)); do
    echo "NodeName=node$k NodeHostname=localhost NodeAddr=127.0.0.$((10 + k)) Port=$((kBasePort + k)) CPUs=$cpus Sockets=1 CoresPerSocket=$cpus ThreadsPerCore=1 RealMemory=1000 State=UNKNOWN" >>"$dir/slurm.conf"
  done
  echo "PartitionName=test Nodes=node[1-$last] Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES" >>"$dir/slurm.conf"
  # One more node whose core 0 Slurm keeps from jobs (CpuSpecList), as LUMI
  # keeps the first core of each CCD: partition "reserved".
  echo "NodeName=spec1 NodeHostname=localhost NodeAddr=127.0.0.9 Port=$((kBasePort + 9)) CPUs=$cpus Sockets=1 CoresPerSocket=$cpus ThreadsPerCore=1 RealMemory=1000 CpuSpecList=0 State=UNKNOWN" >>"$dir/slurm.conf"
  echo "PartitionName=reserved Nodes=spec1 MaxTime=INFINITE State=UP" >>"$dir/slurm.conf"
  # Each node also gets ::1: nss_wrapper answers an IPv6-only lookup of an
  # IPv4-only name with EAI_FAMILY, which PyTorch's c10d retries until its
  # timeout instead of falling back to IPv4 as it does for glibc's answer.
  : >"$dir/hosts"
  for ((k = 1; k <= last; k++)); do
    echo "127.0.0.$((10 + k)) node$k" >>"$dir/hosts"
    echo "::1 node$k" >>"$dir/hosts"
  done
  echo "127.0.0.9 spec1" >>"$dir/hosts"
  echo "::1 spec1" >>"$dir/hosts"
  echo "127.0.0.1 localhost" >>"$dir/hosts"
}

# Hosts mode's nodes and partition (nid001..): slurmctld at this machine's
# address on the hosts' network, each node at its host's.
write_hosts_nodes() {
  local dir=$1 cpus=$2 k name address names=()
  sed -i "s/^SlurmctldHost=.*/SlurmctldHost=localhost($NETWORK_HOSTS_HERE)/" "$dir/slurm.conf"
  for ((k = 1; k <= NETWORK_HOSTS; k++)); do
    name=$(printf 'nid%03d' "$k")
    address=$(on_host "$k" getent ahostsv4 "$name" | awk 'NR == 1 {print $1}')
    [[ -n $address ]] || { echo "local_slurm: $name does not resolve on its host" >&2; return 1; }
    echo "NodeName=$name NodeHostname=$name NodeAddr=$address Port=$((kBasePort + k)) CPUs=$cpus Sockets=1 CoresPerSocket=$cpus ThreadsPerCore=1 RealMemory=1000 State=UNKNOWN" >>"$dir/slurm.conf"
    names+=("$name")
  done
  echo "PartitionName=test Nodes=$(IFS=,; echo "${names[*]}") Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES" >>"$dir/slurm.conf"
}

# on_host K PROGRAM ARGS...: PROGRAM on host K (hosts mode).
on_host() {
  local words="NETWORK_HOST_$1"
  shift
  eval "${!words}" '"$@"'
}

env_lines() {
  local dir=$1
  echo "export SLURM_CONF=$dir/slurm.conf"
  [[ -n ${NETWORK_HOSTS:-} ]] && return
  echo "export NSS_WRAPPER_HOSTS=$dir/hosts"
  echo "export LD_PRELOAD=$kNssWrapper"
}

start_munge() {
  local dir=$1
  mkdir -p "$dir/munge"
  chmod 700 "$dir/munge"
  mungekey --create --keyfile "$dir/munge/munge.key" --force >/dev/null
  munged --key-file "$dir/munge/munge.key" --socket "$dir/munge/munge.socket" \
    --pid-file "$dir/munge/munged.pid" --log-file "$dir/log/munged.log" \
    --seed-file "$dir/munge/seed" --force
}

wait_idle() {
  local dir=$1 nodes=$2 i idle
  for ((i = 0; i < 300; i++)); do
    idle=$(SLURM_CONF=$dir/slurm.conf sinfo -h -N -o '%N %t' 2>/dev/null | grep -c -E ' idle$' || true)
    [[ $idle -ge $nodes ]] && return 0
    sleep 0.2
  done
  echo "local_slurm: nodes did not become idle within 60 s; see $dir/log" >&2
  SLURM_CONF=$dir/slurm.conf sinfo -N >&2 || true
  return 1
}

start() {
  local dir=$1 nodes=${2:-3} owner=${3:-} k
  check
  mkdir -p "$dir"/{state,spool,log}
  dir=$(cd "$dir" && pwd)
  write_config "$dir" "$nodes"
  start_munge "$dir"
  eval "$(env_lines "$dir")"
  slurmctld -i -f "$dir/slurm.conf"
  if [[ -n ${NETWORK_HOSTS:-} ]]; then
    for ((k = 1; k <= NETWORK_HOSTS; k++)); do
      mkdir -p "$dir/spool/$(printf 'nid%03d' "$k")"
      on_host "$k" slurmd -f "$dir/slurm.conf" -N "$(printf 'nid%03d' "$k")"
    done
    wait_idle "$dir" "$NETWORK_HOSTS"
  else
    for ((k = 1; k <= nodes; k++)); do
      mkdir -p "$dir/spool/node$k"
      slurmd -f "$dir/slurm.conf" -N "node$k"
    done
    mkdir -p "$dir/spool/spec1"
    slurmd -f "$dir/slurm.conf" -N spec1
    wait_idle "$dir" "$((nodes + 1))"
  fi
  [[ -n $owner ]] && setsid -f bash "$0" watch "$dir" "$owner" </dev/null >/dev/null 2>&1
  env_lines "$dir"
}

# The daemons detach, so a test killed at its time limit (ctest kills the
# test's process tree, which they left) would leave them running: this
# stops them once OWNER has exited, or quits when DIR is gone (stopped).
watch() {
  local dir=$1 owner=$2
  while kill -0 "$owner" 2>/dev/null && [[ -d $dir ]]; do sleep 1; done
  [[ -d $dir ]] || return 0
  stop "$dir"
  rm -rf "$dir"
}

# The step daemons (slurmstepd) of this cluster's steps, by the configuration
# they run with. They have no pid file and outlive slurmd: one whose step was
# still running when its slurmd went keeps retrying to report the step's end,
# for good, to daemons that are gone.
step_daemons() {
  local dir=$1 pid
  for pid in $(pgrep -x slurmstepd); do
    if tr '\0' '\n' 2>/dev/null <"/proc/$pid/environ" | grep -qxF "SLURM_CONF=$dir/slurm.conf"; then
      echo "$pid"
    fi
  done
}

# SIGKILLs the step daemons and their tasks, all found before any dies, so
# that no task is orphaned (a step daemon ignores SIGTERM). A step daemon may be
# forking its task while the process table is read, and a child forked after
# that read would outlive its killed parent: so the tree is first frozen
# (SIGSTOP; a fork that a pending signal meets is undone by the kernel) and
# read again until a reading finds no process that the last one missed.
kill_steps() {
  local steps tree frozen=""
  steps=$(step_daemons "$1")
  [[ -n $steps ]] || return 0
  while :; do
    tree=$(with_descendants $steps | sort -n)
    kill -STOP $tree 2>/dev/null || true
    [[ $tree == "$frozen" ]] && break
    frozen=$tree
  done
  kill -9 $tree 2>/dev/null || true
}

# with_descendants PIDS: PIDS and every process below them.
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/process-tree.sh"

# Kills the steps (test leftovers), then sends SIGTERM to every daemon at
# once (each takes about 2 s to exit), waits up to 10 s for all of them,
# SIGKILLs what is left, and kills the steps again: a step that slurmd was
# launching while the first search ran (srun had asked for it) appears only
# after it, and once slurmd is gone no new one can.
stop() {
  local dir=$1 f pid i pids=()
  [[ -d $dir ]] || return 0
  kill_steps "$dir"
  for f in "$dir"/slurmd.*.pid "$dir/slurmctld.pid" "$dir/munge/munged.pid"; do
    [[ -f $f ]] || continue
    pid=$(cat "$f" 2>/dev/null || true)
    [[ -n $pid ]] && kill "$pid" 2>/dev/null && pids+=("$pid")
  done
  for ((i = 0; i < 100; i++)); do
    local alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [[ $alive -eq 0 ]] && break
    sleep 0.1
  done
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  kill_steps "$dir"
}

case ${1:-} in
  start) start "${2:?DIR}" "${3:-3}" "${4:-}" ;;
  stop) stop "${2:?DIR}" ;;
  watch) watch "${2:?DIR}" "${3:?OWNER}" ;;
  check) check ;;
  *) echo "usage: $0 start DIR [NODES [OWNER]] | stop DIR | check" >&2; exit 2 ;;
esac
