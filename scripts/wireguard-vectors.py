#!/usr/bin/env python3
"""Known-answer vectors for Tests/WireGuardTests, from an independent implementation:
Python's hashlib/hmac (BLAKE2s, HMAC) and the `cryptography` package (X25519,
ChaCha20-Poly1305), following the WireGuard paper's handshake step by step.

usage: python3 scripts/wireguard-vectors.py   (prints Swift constants to paste)"""
import os, struct, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from wgnoise import AEAD, DH, HASH, HMAC, KDF, MAC, initiation, priv, raw, tai64n
def hexs(b): return b.hex()

pattern = bytes(i % 251 for i in range(300))
print("// BLAKE2s-256 of the first n bytes of (i % 251)")
for n in (0, 1, 55, 64, 65, 128, 300):
    print(f'({n}, "{hexs(HASH(pattern[:n]))}"),')
key32 = bytes(range(32))
print("// keyed BLAKE2s-128 (MAC) with key 00..1f")
for n in (0, 16, 64, 100):
    print(f'({n}, "{hexs(MAC(key32, pattern[:n]))}"),')
print("// HMAC-BLAKE2s(key 00..1f, first 100 bytes) and KDF3 outputs")
print(hexs(HMAC(key32, pattern[:100])))
for o in KDF(3, key32, pattern[:100]): print(hexs(o))

# The handshake with fixed keys.
si_seed = bytes([0x11] * 32); sr_seed = bytes([0x22] * 32)
ei_seed = bytes([0x33] * 32); er_seed = bytes([0x44] * 32)
psk = bytes([0x55] * 32)
Si, Sr, Ei, Er = priv(si_seed), priv(sr_seed), priv(ei_seed), priv(er_seed)
Si_pub, Sr_pub, Ei_pub, Er_pub = raw(Si.public_key()), raw(Sr.public_key()), raw(Ei.public_key()), raw(Er.public_key())
timestamp = tai64n(1700000000, 123456789)
sender_i, sender_r = 0x11223344, 0x55667788
init, C, H = initiation(Si, Sr_pub, Ei, timestamp, sender_i)
H = HASH(H + Er_pub)
C = KDF(1, C, Er_pub)[0]
C = KDF(1, C, DH(Er, Ei_pub))[0]
C = KDF(1, C, DH(Er, Si_pub))[0]
C, tau, k = KDF(3, C, psk)
H = HASH(H + tau)
empty = AEAD(k, 0, b"", H); H = HASH(H + empty)
resp = bytes([2, 0, 0, 0]) + struct.pack("<II", sender_r, sender_i) + Er_pub + empty
resp += MAC(HASH(b"mac1----" + Si_pub), resp) + bytes(16)
send_i, recv_i = KDF(2, C, b"")
packet = bytes.fromhex("4500001c000100004001f7cf0a0000010a000002") + bytes(8)  # IPv4, 28 bytes
padded = packet + bytes((16 - len(packet) % 16) % 16)
data = bytes([4, 0, 0, 0]) + struct.pack("<IQ", sender_r, 0) + AEAD(send_i, 0, padded, b"")
print("// handshake: statics 0x11../0x22.., ephemerals 0x33../0x44.., psk 0x55.., wall 1700000000.123456789")
for name, v in [("initiation", init), ("response", resp), ("sendInitiator", send_i), ("receiveInitiator", recv_i), ("firstData", data)]:
    print(f'static let {name} = "{hexs(v)}"')
