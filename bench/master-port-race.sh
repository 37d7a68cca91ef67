#!/usr/bin/env bash
# The race in MASTER_PORT: node 0's agent picks a free port, closes it, and
# rank 0 binds it for PyTorch's TCPStore once it has started and imported
# torch, a window of about a second and a half (bench/launch.sh: torchrun
# 2.x's workers start 1.5 s after the launch). How often does another
# process take the port in between on a busy node? Each trial picks a port,
# waits WINDOW seconds while a load runs, then binds it as TCPStore does
# (SO_REUSEADDR, listen) and counts EADDRINUSE. Two ways to pick, side by
# side under each load:
#   kernel   bind to port 0 and read it: a port of the ephemeral range
#            (distrun's pick until December 2026, and Python's usual idiom);
#   distrun  pickFreeTcpPort: a random free port from 30000 up to the
#            ephemeral range, which the kernel hands to no one by itself.
# Loads:
#   connects  short-lived outgoing connections as fast as one core makes
#             them (data loaders, a file system's client);
#   binds     servers taking a port of the kernel's (bind to port 0 and hold
#             it: other ranks' Gloo and NCCL listeners, other jobs),
#             HELD of them at a time.
# The last line: ports lost per trial under the binds load, each way.
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

def kernel_pick():
    s = socket.socket()
    s.bind(("0.0.0.0", 0))
    port = s.getsockname()[1]
    s.close()
    return port

FIRST_EPHEMERAL = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])

def distrun_pick():  # as distrun/common/system.cc's pickFreeTcpPort
    import random
    for _ in range(32):
        port = random.randint(30000, FIRST_EPHEMERAL - 1)
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("0.0.0.0", port))
            return port
        except OSError:
            pass
        finally:
            s.close()
    return kernel_pick()

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
        try:
            c.connect(("127.0.0.1", port))
        except OSError:  # the sink's backlog full: try again
            continue
        finally:
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

def run(pick, load, *args):
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
print(f"{'load':<18} {'events/s':>10} {'kernel pick lost':>17} {'distrun pick lost':>18}"
      f"   ({trials} trials each, {window} s window)")
lost_under_binds = {}
for name, load, args in rows:
    counts = []
    for pick in (kernel_pick, distrun_pick):
        lost, rate = run(pick, load, *args)
        counts.append(lost)
    lost_under_binds = dict(zip(("kernel", "distrun"), counts))
    print(f"{name:<18} {rate:>10.0f} {counts[0]:>10} of {trials} {counts[1]:>11} of {trials}")
scale = 1.5 / window
k, d = lost_under_binds["kernel"], lost_under_binds["distrun"]
print(f"race under the binds load, {window} s window: the kernel's pick lost {k} of {trials}"
      f" (about {min(1.0, k / trials * scale):.3f} a job for torch's 1.5 s start),"
      f" distrun's {d} of {trials}")
PY
