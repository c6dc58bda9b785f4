#!/usr/bin/env python3
"""A member that tries to leave its profile other than through the tunnel.

usage: leak.py MODE ARG... ; every mode sends for SECONDS (default 2) and ignores errors
  udp-mark MARK HOST PORT [SECONDS]   SO_MARK=MARK (needs CAP_NET_RAW/ADMIN), then UDP
  udp-bind DEVICE HOST PORT [SECONDS] SO_BINDTODEVICE (no privilege since Linux 5.7)
  icmp-raw HOST [SECONDS]             raw ICMP/ICMPv6 echo requests (needs CAP_NET_RAW)
  icmp-dgram HOST [SECONDS]           ICMP datagram ("ping") socket, unprivileged
  listen PORT                         TCP listener on every address, v4 and v6, until killed;
                                      prints "listening" once bound"""
import socket, struct, sys, time

mode = sys.argv[1]

def family(host):
    return socket.AF_INET6 if ":" in host else socket.AF_INET

def keep_sending(send, seconds):
    end = time.monotonic() + float(seconds)
    while time.monotonic() < end:
        try:
            send()
        except OSError:
            pass
        time.sleep(0.01)

def echo_request(v6, ident, seq):
    kind = 128 if v6 else 8
    payload = b"vpnexec-leak-test"
    header = struct.pack("!BBHHH", kind, 0, 0, ident, seq)
    if v6:
        return header + payload  # the kernel fills in the ICMPv6 checksum
    total = header + payload
    padded = total + (b"\0" if len(total) % 2 else b"")
    s = sum(struct.unpack("!%dH" % (len(padded) // 2), padded))
    while s > 0xffff:
        s = (s & 0xffff) + (s >> 16)
    return struct.pack("!BBHHH", kind, 0, (~s) & 0xffff, ident, seq) + payload

if mode == "udp-mark":
    mark, host, port = int(sys.argv[2], 0), sys.argv[3], int(sys.argv[4])
    s = socket.socket(family(host), socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_MARK, struct.pack("I", mark))  # a u32; 0xffffffff is no C int
    keep_sending(lambda: s.sendto(b"marked", (host, port)), sys.argv[5] if len(sys.argv) > 5 else 2)
elif mode == "udp-bind":
    device, host, port = sys.argv[2], sys.argv[3], int(sys.argv[4])
    s = socket.socket(family(host), socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, device.encode())
    keep_sending(lambda: s.sendto(b"bound", (host, port)), sys.argv[5] if len(sys.argv) > 5 else 2)
elif mode in ("icmp-raw", "icmp-dgram"):
    host = sys.argv[2]
    v6 = family(host) == socket.AF_INET6
    proto = socket.IPPROTO_ICMPV6 if v6 else socket.IPPROTO_ICMP
    s = socket.socket(family(host), socket.SOCK_RAW if mode == "icmp-raw" else socket.SOCK_DGRAM, proto)
    seq = [0]
    def ping():
        seq[0] += 1
        s.sendto(echo_request(v6, 0x7e57, seq[0]), (host, 0))
    keep_sending(ping, sys.argv[3] if len(sys.argv) > 3 else 2)
elif mode == "listen":
    port = int(sys.argv[2])
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("::", port))
    s.listen(16)
    print("listening", flush=True)
    while True:
        c, peer = s.accept()
        c.sendall(b"hello\n")
        c.close()
else:
    sys.exit("unknown mode " + mode)
