#!/usr/bin/env python3
"""A stand-in for an ordinary application.

usage: probe.py MODE HOST PORT
  tcp         one connection; prints the source address the server saw
  tcp-thread  the same from a new thread
  tcp-fork    the same from a forked child
  udp-loop    a datagram every 10 ms, forever
  udp-fresh   the same, each from a new socket (one that fails to open is tried again)
  hold        connection A; on a line from stdin connection B; prints
              "A <src>", "B <src>", "A-again <src>" (A reused after B)
  tcp-name    one connection; prints its own address (getsockname) and the one the
              server saw: "<local> <seen>"
  udp-name    the same with a connected UDP socket (one datagram and its answer)
  mark        prints the mark (SO_MARK) a new socket has from its creation, in hex
  made-before a TCP and a UDP socket made at once; prints "ready"; on a line from stdin
              connects both and prints "tcp <local> <seen>" and "udp <local> <seen>"
              (sockets made before their process was moved)"""
import os, socket, sys, threading, time
mode, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
fam = socket.AF_INET6 if ":" in host else socket.AF_INET
def ask():
    s = socket.create_connection((host, port), timeout=3)
    line = s.makefile("rb").readline().decode().strip()
    s.close()
    return line
if mode == "tcp":
    print(ask(), flush=True)
elif mode == "tcp-thread":
    out = []
    t = threading.Thread(target=lambda: out.append(ask())); t.start(); t.join()
    print(out[0], flush=True)
elif mode == "tcp-fork":
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(w, ask().encode()); os._exit(0)
    os.waitpid(pid, 0)
    print(os.read(r, 200).decode(), flush=True)
elif mode in ("tcp-name", "udp-name", "made-before"):
    def named(s, tcp):
        s.settimeout(3)
        s.connect((host, port))
        if tcp:
            seen = s.makefile("rb").readline().decode().strip()
        else:
            s.send(b"x")
            seen = s.recv(200).decode().strip()
        local = s.getsockname()[0]
        s.close()
        return f"{local} {seen}"
    if mode == "made-before":
        t, u = socket.socket(fam, socket.SOCK_STREAM), socket.socket(fam, socket.SOCK_DGRAM)
        print("ready", flush=True)
        sys.stdin.readline()
        print("tcp", named(t, True), flush=True)
        print("udp", named(u, False), flush=True)
    else:
        print(named(socket.socket(fam, socket.SOCK_STREAM if mode == "tcp-name" else socket.SOCK_DGRAM), mode == "tcp-name"), flush=True)
elif mode == "mark":
    s = socket.socket(fam, socket.SOCK_DGRAM)
    print(hex(s.getsockopt(socket.SOL_SOCKET, 36)), flush=True)  # SO_MARK
elif mode == "udp-loop":
    s = socket.socket(fam, socket.SOCK_DGRAM)
    while True:
        try:
            s.sendto(b"x", (host, port))
        except OSError:
            pass
        time.sleep(0.01)
elif mode == "udp-fresh":
    while True:
        try:
            with socket.socket(fam, socket.SOCK_DGRAM) as s:
                s.sendto(b"x", (host, port))
        except OSError:
            pass
        time.sleep(0.01)
elif mode == "hold":
    a = socket.create_connection((host, port), timeout=5)
    af = a.makefile("rb")
    print("A", af.readline().decode().strip(), flush=True)
    sys.stdin.readline()
    print("B", ask(), flush=True)
    a.sendall(b"again\n")
    print("A-again", af.readline().decode().strip(), flush=True)
