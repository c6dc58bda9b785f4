#!/usr/bin/env python3
"""Holds COUNT idle connections to vpnd's control socket for SECONDS, opening a new one
whenever vpnd closes one (a user trying to lock everybody else out).

usage: flood.py SOCKET COUNT SECONDS
Prints "opened N refused M" at the end (M: connections vpnd answered with a refusal)."""
import select, socket, sys, time

path, count, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
opened = refused = 0
live = []

def connect():
    global opened
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
    except OSError:
        s.close()
        return None
    opened += 1
    return s

end = time.monotonic() + seconds
while time.monotonic() < end:
    while len(live) < count:
        s = connect()
        if s is None:
            break
        live.append(s)
    readable, _, _ = select.select(live, [], [], 0.05)
    for s in readable:
        data = s.recv(4096)
        if b"too many" in data or b"busy" in data:
            refused += 1
        live.remove(s)
        s.close()
print("opened", opened, "refused", refused, flush=True)
