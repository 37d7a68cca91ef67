# The drills of bench/drills.sh on files and the machine: snapshots (a
# full disk, a kill -9 and a resume, a corrupt file), a taken port and a
# small /dev/shm. Sourced by bench/drills.sh.

# snapshot_state SNAP: "no" when SNAP is a whole snapshot and no
# half-written SNAP.tmp.* is left, else "yes: " and what is wrong.
snapshot_state() {
  local why=() check
  check=$(python3 "$drills/snapshot_check.py" "$1" 2>&1) || why+=("$check")
  compgen -G "$1.tmp.*" >/dev/null && why+=("$(ls "$1".tmp.* | head -1) left")
  if ((${#why[@]})); then echo "yes: ${why[*]}"; else echo no; fi
}
# mount_tmpfs DIR SIZE: a tmpfs of SIZE on DIR, unmounted at the end.
mount_tmpfs() {
  mkdir -p "$1"
  mount -t tmpfs -o "size=$2" drills "$1" 2>"$tmp/mount.err" || return 1
  mounts+=("$1")
}

# ---- snapshots ----------------------------------------------------------------
# The disk fills while rank 0 writes a snapshot: MNIST's (14 MB) with 4 MiB
# left, else the linear workload's with none. Snapshots every 100 steps (MNIST:
# seconds apart) so that the fill lands between the first and the second.
drill_disk_full() {
  new_mark disk_full
  local dir=$tmp/full snap=$tmp/full/s.snap leave cmd ok
  if ! mount_tmpfs "$dir" 48m; then
    record "disk full while a snapshot is written" local "-" "-" - - - \
      "n/a (cannot mount a tmpfs: $(head -1 "$tmp/mount.err"))"
    return
  fi
  if [[ -f $data/MNIST/raw/train-images-idx3-ubyte ]]; then
    cmd=("$bin/distrun-train" mnist --data "$data" --epochs 100 --limit-test 64
      --threads-per-rank 1 --progress epochs) leave=$((4 << 20))
  else
    cmd=("${train[@]}") leave=0
  fi
  # Filled between the first snapshot and the second: the second write finds
  # no room. Later, renaming SNAP to SNAP.prev frees the older .prev first,
  # which would make room again (the next one is written whole).
  launch local "${cmd[@]}" --snapshot "$snap" --save-every-steps 100
  local i
  for ((i = 0; i < 1200; i++)); do [[ -e $snap ]] && break; sleep 0.1; done
  sleep 0.2
  local avail=$(df --output=avail -B1 "$dir" | tail -1) t0
  t0=$(now)
  fallocate -l $((avail - leave)) "$dir/filler" 2>/dev/null ||
    dd if=/dev/zero of="$dir/filler" bs=1M 2>/dev/null
  wait_end "${agents[@]}"
  ok=$(verdict eval 'codes_are 74 && grep -q "snapshot $snap" "${logs[0]}"')
  local lost=$(snapshot_state "$snap")
  [[ $lost == no ]] || ok=FAIL
  record "disk full while a snapshot is written" local \
    "exit 74 naming $(basename "$snap"); the previous one whole" \
    "$(exits): $(last_error "${logs[0]}" "error: snapshot")" "$(since "$t0")" "$(orphans)" \
    "$lost" "$ok"
}

# crc LOG: the parameters' crc32 that distrun-train printed.
crc() { sed -n 's/.*parameters identical on all .* ranks: crc32 \([0-9a-f]*\).*/\1/p' "$1"; }

# The job is killed -9 (every process at once, as a node would die) in the
# middle of training, and started again: it resumes from the snapshot and
# ends bitwise equal to an uninterrupted --deterministic run.
drill_kill_and_resume() {
  new_mark kill_and_resume_whole
  local epochs=150 snap=$tmp/$run_mark-kill_and_resume.snap ok
  local cmd=("$bin/distrun-train" linear --epochs "$epochs" --batch-size 8 --threads-per-rank 1
    --deterministic --progress epochs)
  launch local "${cmd[@]}"
  wait_end "${agents[@]}"
  local whole=$(crc "${logs[0]}")
  new_mark kill_and_resume
  launch local "${cmd[@]}" --snapshot "$snap" --save-every-steps 50
  wait_for "epoch $((epochs / 3))/" "${logs[0]}" 300
  kill -9 $(pids_of) 2>/dev/null
  wait_end "${agents[@]}"
  local left=$(orphans) first=$(exits) broken half
  broken=$(python3 "$drills/snapshot_check.py" "$snap" 2>&1 >/dev/null)
  half=$(compgen -G "$snap.tmp.*" | wc -l)
  local log=$tmp/$mark.resumed.log
  start "$log" "$bin/distrun" run --nproc-per-node 2 $(run_flags) "${cmd[@]}" --snapshot "$snap" \
    --save-every-steps 50
  wait_end $!
  local resumed=$(grep -o 'resumed from [^:]*: epoch [0-9]*, step [0-9]*' "$log" | head -1 |
    sed "s|$tmp/||")
  ok=$(verdict eval 'codes_are 0 && [[ -n $whole && $(crc "$log") == "$whole" && -n $resumed ]]')
  # Whole after the kill; after the resume whole again, and no PATH.tmp.* left.
  local lost=$(snapshot_state "$snap")
  [[ -z $broken ]] || lost="yes: after the kill: $broken"
  [[ $lost == no ]] || ok=FAIL
  record "kill -9 mid-training, resumed" local \
    "resumes to the crc32 of an uninterrupted run ($whole); no PATH.tmp.* left" \
    "killed ($first, $half PATH.tmp.* left), $resumed; $(exits), crc32 $(crc "$log")" - \
    "$((left + $(orphans)))" "$lost" "$ok"
}

# A snapshot whose bytes changed: with its .prev whole the run resumes from
# that and warns; without one it stops, exit 65, naming the file.
drill_corrupt_snapshot() {
  local prev
  for prev in kept removed; do
    new_mark "corrupt_$prev"
    local snap=$tmp/$mark.snap log=$tmp/$mark.log ok expected
    start "$tmp/$mark.first.log" "$bin/distrun" run --nproc-per-node 2 $(run_flags) \
      "${short[@]}" --epochs 2 --snapshot "$snap"
    wait_end $!
    python3 -c 'import sys; f = open(sys.argv[1], "r+b"); f.seek(-10, 2); b = f.read(1)
f.seek(-10, 2); f.write(bytes([b[0] ^ 0xff]))' "$snap"
    [[ $prev == kept ]] || rm -f "$snap.prev"
    local t0=$(now)
    start "$log" "$bin/distrun" run --nproc-per-node 2 $(run_flags) "${short[@]}" --epochs 4 \
      --snapshot "$snap"
    wait_end $!
    if [[ $prev == kept ]]; then
      expected="warns naming it, resumes from .prev, exit 0"
      ok=$(verdict eval 'codes_are 0 && grep -q "$snap.*corrupt" "$log" &&
        has "$log" "resumed from $snap.prev"')
    else
      expected="exit 65 naming it"
      ok=$(verdict eval 'codes_are 65 && has "$log" "error: snapshot $snap is corrupt"')
    fi
    record "corrupted snapshot, .prev $prev" local "$expected" \
      "$(exits): $(last_error "$log")" "$(since "$t0")" "$(orphans)" \
      "$([[ -e $snap ]] && echo no || echo "yes: $(basename "$snap") removed")" "$ok"
  done
}

# ---- the machine --------------------------------------------------------------
# The port the job's store must listen on is held by another process.
drill_port_taken() {
  new_mark port_taken
  local port=$(free_port) ok job
  python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen(); print("ready", flush=True)
time.sleep(3600)' "$port" >"$tmp/$mark.holder" &
  helpers+=($!)
  wait_for ready "$tmp/$mark.holder" 30
  for job in local "2 nodes"; do
    new_mark "port_taken_${job// /}"
    local t0=$(now) log=$tmp/$mark.log
    if [[ $job == local ]]; then
      start "$log" "$bin/distrun" run --master-addr 127.0.0.1 --master-port "$port" \
        --nproc-per-node 2 $(run_flags) "${short[@]}"
      wait_end $!
      ok=$(verdict eval 'codes_are 78 && grep -q "port $port is already in use" "$log"')
    else
      logs=("$log" "$tmp/$mark.1.log")
      start_node 0 "$port" "$mark" "${logs[0]}" "${short[@]}"
      agents=($!)
      start "${logs[1]}" env DISTRUN_TOKEN="$mark" "$bin/distrun" run \
        $(node_flags 1 "$port" 10) "${short[@]}"
      agents+=($!)
      wait_end "${agents[@]}"
      ok=$(verdict eval 'codes_are 78 x && grep -q "port $port is already in use" "$log"')
    fi
    record "the store's port is taken" "$job" "exit 78 naming the port and the flags" \
      "$(exits): $(last_error "$log")" "$(since "$t0")" "$(orphans)" - "$ok"
  done
  kill "${helpers[-1]}" 2>/dev/null
}

# /dev/shm of 64 KiB (a mount namespace of the job's own): the ranks cannot
# reserve the shared-memory allreduce's segment, warn, and use TCP.
drill_small_shm() {
  new_mark small_shm
  local log=$tmp/$mark.log ok
  if ! unshare -m true 2>"$tmp/mount.err"; then
    record "/dev/shm too small" local "-" "-" - - - \
      "n/a (no mount namespace: $(head -1 "$tmp/mount.err"))"
    return
  fi
  local t0=$(now)
  start "$log" unshare -m sh -c 'mount -t tmpfs -o size=64k drills /dev/shm && exec "$@"' sh \
    "$bin/distrun" run --nproc-per-node 2 $(run_flags) "${short[@]}"
  wait_end $!
  ok=$(verdict eval 'codes_are 0 && has "$log" "no shared-memory collectives"')
  record "/dev/shm too small (64 KiB)" local "warning, falls back to TCP, exit 0" \
    "$(exits): $(last_error "$log")" "$(since "$t0")" "$(orphans)" - "$ok"
}
