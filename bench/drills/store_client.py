#!/usr/bin/env python3
"""Hostile clients of distrun's rendezvous store, for bench/drills.sh.

  store_client.py garbage HOST PORT TOKEN   bytes that are not the protocol, and
                                            half-written frames kept open
  store_client.py idle HOST PORT N          N connections that never send a byte

Each prints one line once its connections are made ("ready ...") and then
holds them open until it is killed, so the job runs with them in place.
The wire format is distrun/rdzv/wire.h: u32 body length (little endian) |
u8 opcode | fields, each u32 length | bytes; the first frame is kHello.
"""
import os
import resource
import signal
import socket
import struct
import sys
import time

HELLO, SET, GET, OK = 1, 2, 3, 100
MAX_BODY = 16 << 20


def frame(op, *fields, claimed=None):
    body = bytes([op]) + b"".join(struct.pack("<I", len(f)) + f for f in fields)
    return struct.pack("<I", len(body) if claimed is None else claimed) + body


def connect(host, port):
    s = socket.create_connection((host, port), timeout=10)
    s.setblocking(True)
    return s


def send_and_close(host, port, data):
    with connect(host, port) as s:
        s.sendall(data)
        time.sleep(0.05)


def garbage(host, port, token):
    """Each fault on its own connection; the half-written ones stay open."""
    tok = token.encode()
    closed = [
        os.urandom(3000),
        b"GET / HTTP/1.0\r\n\r\n",
        struct.pack("<I", MAX_BODY + 1),  # a frame over the limit
        frame(77, b"x"),  # an unknown opcode before kHello
        frame(HELLO, b"wrong-token"),
        frame(SET, b"k", b"v"),  # a request before kHello
        # a field running past its frame
        struct.pack("<I", 9) + bytes([HELLO]) + struct.pack("<I", 1000) + b"abcd",
        frame(HELLO, tok) + frame(OK),  # a server's opcode from a client
        frame(HELLO, tok) + os.urandom(2000),
    ]
    for data in closed:
        send_and_close(host, port, data)
    held = []
    for data in [
        struct.pack("<I", 100) + b"0123456789",  # header says 100 bytes, 10 sent
        b"\x05\x00",  # half a length header
        frame(HELLO, tok) + frame(SET, b"drill/key", b"value")[:12],  # half a request
        frame(HELLO, tok)[:7],  # half a hello
    ]:
        s = connect(host, port)
        s.sendall(data)
        held.append(s)
    print(f"ready: {len(closed)} closed, {len(held)} half-written held open", flush=True)
    return held


def idle(host, port, count):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, count + 64)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    held, errors = [], {}
    for _ in range(count):
        try:
            held.append(connect(host, port))
        except OSError as e:
            errors[e.strerror] = errors.get(e.strerror, 0) + 1
    failed = ", ".join(f"{n} {why}" for why, n in errors.items()) or "none refused"
    print(f"ready: {len(held)} of {count} open ({failed})", flush=True)
    return held


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    mode, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if mode == "garbage":
        held = garbage(host, port, sys.argv[4])
    else:
        held = idle(host, port, int(sys.argv[4]))
    while True:
        time.sleep(3600)
    del held


if __name__ == "__main__":
    main()
