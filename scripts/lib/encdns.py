#!/usr/bin/env python3
"""What a DNS-over-TLS (tcp) or DNS-over-QUIC (udp) client meets at HOST PORT.

usage: encdns.py tcp|udp HOST PORT
Prints "refused" when it is refused at once (the socket's connect() refused with EPERM, a
TCP reset, an ICMP port unreachable), "timeout" when nothing answers in 5 s (a silent drop),
or "reached SRC" with the source address the reporting server saw."""
import errno, socket, sys

transport, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
family = socket.AF_INET6 if ":" in host else socket.AF_INET
try:
    if transport == "tcp":
        s = socket.create_connection((host, port), timeout=5)
        print("reached", s.makefile("rb").readline().decode().strip())
    else:
        s = socket.socket(family, socket.SOCK_DGRAM)
        s.settimeout(5)
        s.connect((host, port))
        try:
            s.send(b"x")
        except PermissionError:
            pass  # dropped by a firewall rule; a reject's ICMP error follows
        print("reached", s.recv(200).decode().strip())
except (ConnectionRefusedError, PermissionError):
    print("refused")
except socket.timeout:
    print("timeout")
except OSError as error:
    print("error", errno.errorcode.get(error.errno, error.errno))
