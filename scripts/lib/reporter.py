#!/usr/bin/env python3
"""A TCP and UDP service that answers every client with the source address it saw and
logs one line per connection or datagram ("tcp ADDR", "udp ADDR").

usage: reporter.py LOGFILE PORT ADDRESS...
Used by the demo and the integration tests as the far end of a tunnel."""
import socket, sys, threading
log_path, port, addrs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
lock = threading.Lock()
def record(kind, addr):
    with lock, open(log_path, "a") as f:
        f.write(f"{kind} {addr}\n")
def tcp(addr):
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port)); s.listen(64)
    while True:
        c, peer = s.accept()
        threading.Thread(target=serve, args=(c, peer[0]), daemon=True).start()
def serve(c, peer):
    record("tcp", peer)
    try:
        c.sendall((peer + "\n").encode())
        # Echo the source again for every line the client sends (held connections).
        f = c.makefile("rb")
        for _ in f:
            c.sendall((peer + "\n").encode())
    except OSError:
        pass
    c.close()
def udp(addr):
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.bind((addr, port))
    while True:
        data, peer = s.recvfrom(2048)
        record("udp", peer[0])
        s.sendto((peer[0] + "\n").encode(), peer)
for a in addrs:
    threading.Thread(target=tcp, args=(a,), daemon=True).start()
    threading.Thread(target=udp, args=(a,), daemon=True).start()
threading.Event().wait()
