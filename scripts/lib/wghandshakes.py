#!/usr/bin/env python3
"""Real handshake initiations from many distinct peers, for the handshake benchmark.

usage:
  wghandshakes.py peers N DIR         N key pairs: DIR/peers.conf ([Peer] sections for the
                                      server) and DIR/peers.keys (their private keys)
  wghandshakes.py send DIR SERVERPUB HOST PORT RATE
                                      one initiation per peer, RATE per second; prints
                                      "sent N responses M" (responses seen within 3 s)"""
import base64, os, socket, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from wgnoise import X25519PrivateKey, initiation, private_bytes, priv, raw, tai64n

if sys.argv[1] == "peers":
    n, d = int(sys.argv[2]), sys.argv[3]
    keys = [X25519PrivateKey.generate() for _ in range(n)]
    with open(os.path.join(d, "peers.keys"), "w") as f:
        for k in keys: f.write(base64.b64encode(private_bytes(k)).decode() + "\n")
    with open(os.path.join(d, "peers.conf"), "w") as f:
        for i, k in enumerate(keys):
            f.write(f"[Peer]\nPublicKey = {base64.b64encode(raw(k.public_key())).decode()}\n"
                    f"AllowedIPs = 10.{100 + i // 65536}.{(i // 256) % 256}.{i % 256}/32\n\n")
else:
    d, server, host, port, rate = sys.argv[2], base64.b64decode(sys.argv[3]), sys.argv[4], int(sys.argv[5]), float(sys.argv[6])
    keys = [priv(base64.b64decode(line)) for line in open(os.path.join(d, "peers.keys"))]
    now = time.time()
    messages = [initiation(k, server, X25519PrivateKey.generate(), tai64n(int(now), 0), i + 1)[0] for i, k in enumerate(keys)]
    s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_DGRAM)
    s.setblocking(False)
    responses = 0
    start = time.time()
    def drain():
        global responses
        try:
            while True:
                reply = s.recv(200)
                if reply[0] == 2: responses += 1
        except BlockingIOError:
            pass
    for i, m in enumerate(messages):
        while i > (time.time() - start) * rate:
            drain(); time.sleep(0.0005)
        s.sendto(m, (host, port))
    end = time.time() + 3
    while time.time() < end and responses < len(messages):
        drain(); time.sleep(0.01)
    print(f"sent {len(messages)} responses {responses}")
