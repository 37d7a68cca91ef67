# The drills of bench/drills.sh, one function each (sourced by it; they use
# its helpers: start, wait_end, orphans, record, ...). Each runs its fault
# on its job(s) and records one row per job.

# launch JOB CMD...: starts CMD as the workers of a "local" job (one agent,
# 2 ranks) or a "2 nodes" job (two agents, 1 rank each, rank 1 on node 1);
# sets agents (pids, node 0 first), logs (their output) and port.
launch() {
  local job=$1
  shift
  agents=() logs=()
  if [[ $job == local ]]; then
    logs=("$tmp/$mark.log")
    start "${logs[0]}" "$bin/distrun" run --nproc-per-node 2 $(run_flags) "${extra[@]}" "$@"
    agents=($!)
    return
  fi
  port=$(free_port)
  local node
  for node in 0 1; do
    logs+=("$tmp/$mark.$node.log")
    start_node "$node" "$port" "$mark" "${logs[$node]}" "$@"
    agents+=($!)
  done
}
# start_node NODE PORT TOKEN LOG CMD...: one of two agents, in the background.
start_node() {
  start "$4" env DISTRUN_TOKEN="$3" "$bin/distrun" run $(node_flags "$1" "$2") "${extra[@]}" \
    "${@:5}"
}
extra=() # more flags for the agents of the next launch
# codes_are EXPECTED...: the exit codes of wait_end are these ("x": any but 0 or hung).
codes_are() {
  local i
  for i in "${!codes[@]}"; do
    [[ ${codes[$i]} == "$1" || ($1 == x && ${codes[$i]} != 0 && ${codes[$i]} != hung) ]] ||
      return 1
    [[ $# -le 1 ]] || shift
  done
}
verdict() { if "$@"; then echo pass; else echo FAIL; fi; }
exits() { local IFS=/; echo "exit ${codes[*]}"; }
started() { wait_for "epoch 2/" "${logs[0]}" 120; }

# ---- workers ----------------------------------------------------------------
drill_worker_exit() {
  local job ok
  for job in local "2 nodes"; do
    new_mark "worker_exit_${job// /}"
    # rank 1's shell trains in the background, then exits 3 when told to,
    # leaving its distrun-train for the agent to end.
    launch "$job" env GO="$tmp/$mark.go" sh -c \
      'if [ "$RANK" = 1 ]; then "$@" & until [ -e "$GO" ]; do sleep 0.05; done; exit 3; fi
       exec "$@"' worker "${train[@]}"
    started || {
      record "worker exits 3" "$job" "-" "training never started" - - - FAIL
      continue
    }
    local t0=$(now)
    touch "$tmp/$mark.go"
    wait_end "${agents[@]}"
    ok=$(verdict eval 'codes_are 3 && reports_rank "${logs[0]}" 1')
    record "worker exits 3" "$job" "exit 3, report names rank 1" \
      "$(exits): $(last_error "${logs[0]}")" \
      "$(since "$t0")" "$(orphans)" - "$ok"
  done
}

drill_worker_kill() {
  local job ok
  for job in local "2 nodes"; do
    new_mark "worker_kill_${job// /}"
    launch "$job" "${train[@]}"
    started || {
      record "worker SIGKILLed" "$job" "-" "training never started" - - - FAIL
      continue
    }
    local t0=$(now)
    kill -KILL "$(worker 1)"
    wait_end "${agents[@]}"
    ok=$(verdict eval 'codes_are 137 && reports_rank "${logs[0]}" 1')
    record "worker SIGKILLed" "$job" "exit 137, report names rank 1" \
      "$(exits): $(last_error "${logs[0]}")" "$(since "$t0")" "$(orphans)" - "$ok"
  done
}

drill_worker_stop() {
  local job ok
  for job in local "2 nodes"; do
    # The help whole, then the match: `| grep -q` under pipefail fails when
    # grep's early exit hits distrun with SIGPIPE.
    if [[ $("$bin/distrun" run --help 2>&1) != *--hang-timeout* ]]; then
      record "worker SIGSTOPped" "$job" "exit 75 naming rank 1 (--hang-timeout 5)" "-" - - - \
        "n/a (no --hang-timeout in this build)"
      continue
    fi
    new_mark "worker_stop_${job// /}"
    extra=(--hang-timeout 5)
    launch "$job" "${train[@]}"
    extra=()
    started || {
      record "worker SIGSTOPped" "$job" "-" "training never started" - - - FAIL
      continue
    }
    local t0=$(now) pid
    pid=$(worker 1)
    kill -STOP "$pid"
    wait_end "${agents[@]}"
    kill -CONT "$pid" 2>/dev/null
    ok=$(verdict eval 'codes_are 75 && grep -q "rank 1\b" "${logs[0]}"')
    record "worker SIGSTOPped" "$job" "exit 75 naming rank 1 (--hang-timeout 5)" \
      "$(exits): $(last_error "${logs[0]}")" "$(since "$t0")" "$(orphans)" - "$ok"
  done
}

# ---- agents -----------------------------------------------------------------
drill_agent_signals() {
  local sig job
  for sig in TERM INT KILL; do
    for job in local "2 nodes"; do agent_signal "$sig" "$job"; done
  done
}
# agent_signal SIG JOB: SIG to the agent (node 1's of two); every process
# of the job must be gone once the agents ended.
agent_signal() {
  local sig=$1 job=$2 expected ok want
  new_mark "agent_${sig}_${job// /}"
  launch "$job" "${train[@]}"
  started || {
    record "agent SIG$sig" "$job" "-" "training never started" - - - FAIL
    return
  }
  local t0=$(now) n=$(kill -l "$sig")
  kill "-$sig" "${agents[-1]}"
  wait_end "${agents[@]}"
  want=$((128 + n))
  local left=$(orphans) detect happened
  detect=$(since "$t0") # the job's last process is gone
  if [[ $sig == KILL ]]; then
    expected="agent 137, its workers gone (pdeathsig)"
    [[ $job == local ]] || expected="node 1 137, node 0 fails, no process left"
    ok=$(verdict eval 'codes_are x $want')
    happened="$(exits); $left process(es) of the job left"
    [[ $job == local ]] || happened+="; node 0: $(last_error "${logs[0]}")"
  else
    expected="exit $want on every node, \"job interrupted by SIG$sig\""
    ok=$(verdict eval 'codes_are $want && has "${logs[-1]}" "job interrupted by SIG$sig"')
    happened="$(exits): $(last_error "${logs[0]}")"
  fi
  [[ $left == 0 ]] || ok=FAIL
  record "agent SIG$sig" "$job" "$expected" "$happened" "$detect" "$left" - "$ok"
}

# ---- the rendezvous ---------------------------------------------------------
drill_node_never_joins() {
  new_mark node_never_joins
  local port=$(free_port) t0=$(now) log=$tmp/$mark.log ok
  start "$log" env DISTRUN_TOKEN=t "$bin/distrun" run $(node_flags 0 "$port" 3) "${train[@]}"
  wait_end $!
  ok=$(verdict eval 'codes_are 76 && has "$log" "node(s) 1 of 2 did not join within 3 s"')
  record "a node never joins" "2 nodes" "exit 76 naming node 1 (--join-timeout 3)" \
    "$(exits): $(last_error "$log")" "$(since "$t0")" "$(orphans)" - "$ok"
}

drill_wrong_token() {
  new_mark wrong_token
  local port=$(free_port) log=$tmp/$mark.wrong.log refused detect ok
  logs=("$tmp/$mark.0.log" "$tmp/$mark.1.log")
  start_node 0 "$port" "$mark" "${logs[0]}" "${short[@]}"
  agents=($!)
  local t0=$(now)
  start_node 1 "$port" wrong "$log" "${short[@]}"
  wait_end $!
  refused=$(exits) detect=$(since "$t0")
  ok=$(verdict eval 'codes_are 76 && has "$log" "refused this agent'"'"'s token"')
  start_node 1 "$port" "$mark" "${logs[1]}" "${short[@]}"
  wait_end "${agents[0]}" $!
  codes_are 0 || ok=FAIL
  record "client with a wrong token" "2 nodes" "refused, exit 76; the right node then joins" \
    "$refused: $(last_error "$log"); then $(exits)" "$detect" "$(orphans)" - "$ok"
}

# store_job FAULT EXPECTED CLIENT_ARGS...: node 0 starts, the hostile client
# connects to its store and holds its connections, then node 1 joins: the
# job must start and finish.
store_job() {
  local fault=$1 expected=$2 ok
  shift 2
  new_mark "store_$1"
  local port=$(free_port) client=$tmp/$mark.client.log
  logs=("$tmp/$mark.0.log" "$tmp/$mark.1.log")
  start_node 0 "$port" "$mark" "${logs[0]}" "${short[@]}"
  agents=($!)
  sleep 1 # node 0's store listens
  python3 "$drills/store_client.py" "$1" 127.0.0.1 "$port" "${@:2}" >"$client" 2>&1 &
  helpers+=($!)
  wait_for "ready" "$client" 60
  local t0=$(now)
  start_node 1 "$port" "$mark" "${logs[1]}" "${short[@]}"
  agents+=($!)
  wait_end "${agents[@]}"
  kill "${helpers[-1]}" 2>/dev/null
  ok=$(verdict eval 'codes_are 0 && has "$client" ready')
  record "$fault" "2 nodes" "$expected" "$(exits) in $(since "$t0") s; $(tr -d '|' <"$client" |
    tail -1 | cut -c1-80)" - "$(orphans)" - "$ok"
}
drill_garbage() {
  store_job "garbage and half-written frames to the store" "the job goes on, exit 0" \
    garbage "$run_mark-store_garbage"
}
drill_idle_connections() {
  store_job "1,000 idle connections to the store" "the job starts and ends, exit 0" idle 1000
}
