#!/usr/bin/env python3
"""Hostile traffic against a WireGuard listener, for the integration tests.

usage:
  wgattack.py replay PCAP HOST PORT   re-send the first initiation and the first data
                                      packet captured in PCAP, and a bit-flipped copy of
                                      that data packet; prints what it sent
  wgattack.py flood PUBKEY HOST PORT SECONDS RATE
                                      initiations with a valid MAC1 (garbage otherwise),
                                      RATE per second; prints "sent N cookies M"
  wgattack.py stats SOCKET            the engine's drop counters (get=stats)"""
import base64, hashlib, os, socket, struct, sys, time

def udp_payloads(path):
    """UDP payloads of an Ethernet pcap (IPv4 and IPv6), in order."""
    data = open(path, "rb").read()
    magic = struct.unpack("<I", data[:4])[0]
    endian = "<" if magic in (0xa1b2c3d4, 0xa1b23c4d) else ">"
    linktype = struct.unpack(endian + "I", data[20:24])[0]
    offset, out = 24, []
    while offset + 16 <= len(data):
        _, _, caplen, _ = struct.unpack(endian + "IIII", data[offset:offset + 16])
        frame = data[offset + 16:offset + 16 + caplen]
        offset += 16 + caplen
        if linktype == 1:
            ethertype, ip = struct.unpack(">H", frame[12:14])[0], frame[14:]
        elif linktype == 113:
            ethertype, ip = struct.unpack(">H", frame[14:16])[0], frame[16:]
        else:
            continue
        if ethertype == 0x0800 and ip[9] == 17:
            udp = ip[(ip[0] & 15) * 4:]
        elif ethertype == 0x86DD and ip[6] == 17:
            udp = ip[40:]
        else:
            continue
        out.append(udp[8:])
    return out

def send(host, port, payloads):
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_DGRAM)
    for p in payloads:
        s.sendto(p, (host, port))
        time.sleep(0.05)

mode = sys.argv[1]
if mode == "replay":
    payloads = udp_payloads(sys.argv[2])
    initiation = next(p for p in payloads if len(p) == 148 and p[0] == 1)
    data = next(p for p in payloads if p[0] == 4 and len(p) > 32)
    flipped = bytearray(data); flipped[-20] ^= 0x01
    send(sys.argv[3], int(sys.argv[4]), [initiation, data, bytes(flipped)])
    print("sent initiation, data, flipped data")
elif mode == "flood":
    key = base64.b64decode(sys.argv[2])
    mac1_key = hashlib.blake2s(b"mac1----" + key).digest()
    host, port, seconds, rate = sys.argv[3], int(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6])
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.setblocking(False)
    sent = cookies = 0
    start = time.time()
    end = start + seconds
    while time.time() < end:
        if sent > (time.time() - start) * rate:
            time.sleep(0.001)
        body = b"\x01\x00\x00\x00" + os.urandom(112)
        s.sendto(body + hashlib.blake2s(body, digest_size=16, key=mac1_key).digest() + bytes(16), (host, port))
        sent += 1
        try:
            while True:
                reply = s.recv(100)
                if len(reply) == 64 and reply[0] == 3:
                    cookies += 1
        except BlockingIOError:
            pass
    print(f"sent {sent} cookies {cookies}")
elif mode == "stats":
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.connect(sys.argv[2])
    c.sendall(b"get=stats\n\n")
    answer = b""
    while not answer.endswith(b"\n\n"):
        chunk = c.recv(4096)
        if not chunk:
            break
        answer += chunk
    print(answer.decode().strip())
