#!/usr/bin/env python3
"""Bulk TCP transfers whose bytes are checked end to end.

usage: bulk.py serve ADDRESS PORT     answers "up N" (reads N bytes, replies with their sha256)
                                      and "down N" (sends N bytes of the agreed stream)
       bulk.py up|down HOST PORT N    one transfer; prints "ok" or what went wrong
       bulk.py udpserve ADDRESS PORT  checks datagrams (see udpsend); at "end" prints
                                      "good G bad B" and exits
       bulk.py udpsend HOST PORT N    N sends of 8 datagrams of 1200 bytes each in one
                                      UDP_SEGMENT (GSO) send, then "end"; each datagram is its
                                      number and bytes derived from it
The stream is random.Random(N).randbytes(N), so both ends know it without sharing it."""
import hashlib, random, socket, sys, threading, time

def stream(n):
    return random.Random(n).randbytes(n)

def read_exactly(f, n):
    h, left = hashlib.sha256(), n
    while left:
        chunk = f.read(min(left, 1 << 20))
        if not chunk:
            break
        h.update(chunk); left -= len(chunk)
    return h.hexdigest(), n - left

def handle(conn):
    with conn:
        f = conn.makefile("rb")
        direction, n = f.readline().decode().split()
        n = int(n)
        if direction == "up":
            digest, got = read_exactly(f, n)
            conn.sendall(f"{digest} {got}\n".encode())
        else:
            conn.sendall(stream(n))

UDP_SEGMENT = 103

def datagram(i):
    return i.to_bytes(4, "big") + random.Random(i).randbytes(1196)

mode = sys.argv[1]
if mode == "udpserve":
    host, port = sys.argv[2], int(sys.argv[3])
    s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    s.bind((host, port))
    print("listening", flush=True)
    good = bad = 0
    while True:
        data = s.recv(65536)
        if data == b"end":
            break
        if len(data) == 1200 and data == datagram(int.from_bytes(data[:4], "big")):
            good += 1
        else:
            bad += 1
    print(f"good {good} bad {bad}", flush=True)
elif mode == "udpsend":
    host, port, n = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_UDP, UDP_SEGMENT, 1200)
    s.connect((host, port))
    for k in range(n):
        s.send(b"".join(datagram(k * 8 + j) for j in range(8)))
        # Paced (a few thousand datagrams a second): the test is about their shape, and an
        # unpaced burst only measures how much UDP a busy machine drops.
        time.sleep(0.002)
    s.setsockopt(socket.SOL_UDP, UDP_SEGMENT, 0)
    for _ in range(3):
        s.send(b"end")
elif mode == "serve":
    host, port = sys.argv[2], int(sys.argv[3])
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, port)); s.listen(8)
    print("listening", flush=True)
    while True:
        c, _ = s.accept()
        threading.Thread(target=handle, args=(c,), daemon=True).start()
else:
    host, port, n = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    c = socket.create_connection((host, port), timeout=30)
    c.sendall(f"{mode} {n}\n".encode())
    expected = hashlib.sha256(stream(n)).hexdigest()
    if mode == "up":
        c.sendall(stream(n))
        reply = c.makefile("rb").readline().decode().split()
        print("ok" if reply == [expected, str(n)] else f"server saw {reply}, sent {expected} {n}")
    else:
        digest, got = read_exactly(c.makefile("rb"), n)
        print("ok" if (digest, got) == (expected, n) else f"received {got} bytes {digest}, expected {expected} {n}")
