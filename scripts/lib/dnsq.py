#!/usr/bin/env python3
"""A DNS client in a few lines, as an application's resolver would ask.

usage: dnsq.py udp|udp-connected|tcp SERVER NAME [A|AAAA]
(udp-connected asks as glibc does: a connected socket, which takes only what comes from
the server it asked)
Prints the answer's A/AAAA addresses, one per line (following the CNAME chain as the
server sends it), or "RCODE n" when the server answered an error; exit 1 on no answer."""
import random, socket, struct, sys

transport, server, name = sys.argv[1], sys.argv[2], sys.argv[3]
qtype = {"A": 1, "AAAA": 28}[sys.argv[4] if len(sys.argv) > 4 else "A"]
ident = random.randrange(65536)
query = struct.pack("!HHHHHH", ident, 0x0100, 1, 0, 0, 0)
query += b"".join(bytes([len(label)]) + label.encode() for label in name.rstrip(".").split(".")) + b"\0"
query += struct.pack("!HH", qtype, 1)
family = socket.AF_INET6 if ":" in server else socket.AF_INET
try:
    if transport == "udp":
        s = socket.socket(family, socket.SOCK_DGRAM)
        s.settimeout(5)
        s.sendto(query, (server, 53))
        answer, _ = s.recvfrom(65535)
    elif transport == "udp-connected":
        s = socket.socket(family, socket.SOCK_DGRAM)
        s.settimeout(5)
        s.connect((server, 53))
        s.send(query)
        answer = s.recv(65535)
    else:
        s = socket.create_connection((server, 53), timeout=5)
        s.sendall(struct.pack("!H", len(query)) + query)
        data = b""
        while len(data) < 2 or len(data) < 2 + struct.unpack("!H", data[:2])[0]:
            chunk = s.recv(65535)
            if not chunk:
                break
            data += chunk
        answer = data[2:]
except OSError as error:
    sys.exit("no answer: %s" % error)

def skip_name(message, offset):
    while True:
        length = message[offset]
        if length & 0xC0 == 0xC0:
            return offset + 2
        if length == 0:
            return offset + 1
        offset += 1 + length

rid, flags, qd, an = struct.unpack("!HHHH", answer[:8])
if rid != ident:
    sys.exit("mismatched answer")
if flags & 0xF:
    print("RCODE", flags & 0xF)
    sys.exit(0)
offset = 12
for _ in range(qd):
    offset = skip_name(answer, offset) + 4
for _ in range(an):
    offset = skip_name(answer, offset)
    rtype, _, _, length = struct.unpack("!HHIH", answer[offset:offset + 10])
    data = answer[offset + 10:offset + 10 + length]
    if rtype == 1:
        print(socket.inet_ntop(socket.AF_INET, data))
    elif rtype == 28:
        print(socket.inet_ntop(socket.AF_INET6, data))
    offset += 10 + length
