#!/usr/bin/env bash
# The race in MASTER_PORT: node 0's agent picks a free port (bind to port 0,
# read it, close it: pickFreeTcpPort) and rank 0 binds it for PyPI's TCPStore
# once it has started and imported torch, a window of about a second and a
# half (bench/launch.sh: torchrun 2.x's workers start 1.5 s after the
# launch). How often does another process take the port in between on a
# busy node? Each trial picks a port as distrun does, waits WINDOW seconds
# while a load runs, then binds the port as TCPStore does (SO_REUSEADDR,
# listen) and counts EADDRINUSE. Two loads, each side by side with none:
#   connects  short-lived outgoing connections as fast as one core makes
#             them (data loaders, a file system's client), each one an
#             ephemeral port while it lives;
#   binds     servers taking a port of their own (bind to port 0 and hold it:
#             other jobs' launchers, notebooks), HELD of them at a time.
# The last line: ports lost per trial, and the trials one loss costs.
#   bench/master-port-race.sh [TRIALS] [WINDOW]   defaults: 200, 0.1
#   report: bench/results/master-port-race.txt
set -euo pipefail
trials=${1:-200}
window=${2:-0.1}
results=${RESULTS:-$(dirname "$0")/results/master-port-race.txt}
mkdir -p "$(dirname "$results")"
exec > >(tee "$results")
echo "# bench/master-port-race.sh $trials $window, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores," \
  "ephemeral ports $(tr '\t' - </proc/sys/net/ipv4/ip_local_port_range)"
/usr/bin/python3 - "$trials" "$window" <<'PY'
import errno, multiprocessing as mp, socket, struct, sys, time

trials, window = int(sys.argv[1]), float(sys.argv[2])
LINGER_RST = struct.pack("ii", 1, 0)  # close with RST: no TIME_WAIT piles up

def pick():  # as distrun's pickFreeTcpPort
    s = socket.socket()
    s.bind(("0.0.0.0", 0))
    port = s.getsockname()[1]
    s.close()
    return port

def rank0_binds(port):  # as TCPStore's server socket
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("0.0.0.0", port))
        s.listen()
        return True
    except OSError as e:
        if e.errno != errno.EADDRINUSE:
            raise
        return False
    finally:
        s.close()

def sink(ready):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1024)
    ready.put(server.getsockname()[1])
    while True:
        c, _ = server.accept()
        c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, LINGER_RST)
        c.close()

def connects(port, count):
    while True:
        c = socket.socket()
        c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, LINGER_RST)
        c.connect(("127.0.0.1", port))
        c.close()
        with count.get_lock():
            count.value += 1

def binds(held, count):
    holding = []
    while True:
        s = socket.socket()
        s.bind(("0.0.0.0", 0))
        s.listen()
        holding.append(s)
        if len(holding) > held:
            holding.pop(0).close()
        with count.get_lock():
            count.value += 1
        time.sleep(0.001)

def run(load, *args):
    count = mp.Value("q", 0)
    worker = mp.Process(target=load, args=(*args, count), daemon=True) if load else None
    if worker:
        worker.start()
        time.sleep(0.5)
    start, lost = count.value, 0
    for _ in range(trials):
        port = pick()
        time.sleep(window)
        lost += not rank0_binds(port)
    events = (count.value - start) / (trials * window)
    if worker:
        worker.kill()
    return lost, events

ready = mp.Queue()
mp.Process(target=sink, args=(ready,), daemon=True).start()
sink_port = ready.get()
rows = [("no load", None, ()), ("connects", connects, (sink_port,)),
        ("binds, 1000 held", binds, (1000,))]
print(f"{'load':<18} {'events/s':>10} {'ports lost':>11}   ({trials} trials, {window} s window each)")
total_lost, total = 0, 0
for name, load, args in rows:
    lost, rate = run(load, *args)
    total_lost += lost if load else 0
    total += trials if load else 0
    print(f"{name:<18} {rate:>10.0f} {lost:>7} of {trials}")
per_trial = total_lost / total
scale = 1.5 / window
print(f"race: {total_lost} ports of {total} lost under load in a {window} s window"
      f" (about {min(1.0, per_trial * scale):.4f} a job for torch's 1.5 s start, at these rates)")
PY
