#!/usr/bin/env python3
"""Known-answer vectors for Tests/WireGuardTests, from an independent implementation:
Python's hashlib/hmac (BLAKE2s, HMAC) and the `cryptography` package (X25519,
ChaCha20-Poly1305), following the WireGuard paper's handshake step by step.

usage: python3 scripts/wireguard-vectors.py   (prints Swift constants to paste)"""
import hashlib, hmac, struct
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives import serialization

def HASH(*parts): return hashlib.blake2s(b"".join(parts)).digest()
def MAC(key, data): return hashlib.blake2s(data, digest_size=16, key=key).digest()
def HMAC(key, data): return hmac.new(key, data, hashlib.blake2s).digest()
def KDF(n, key, data):
    prk = HMAC(key, data); out = []; prev = b""
    for i in range(1, n + 1):
        prev = HMAC(prk, prev + bytes([i])); out.append(prev)
    return out
def raw(pub): return pub.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
def priv(seed): return X25519PrivateKey.from_private_bytes(seed)
def DH(p, pubbytes): return p.exchange(X25519PublicKey.from_public_bytes(pubbytes))
def AEAD(key, counter, plain, ad):
    return ChaCha20Poly1305(key).encrypt(b"\0\0\0\0" + struct.pack("<Q", counter), plain, ad)
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
timestamp = struct.pack(">QI", 0x400000000000000a + 1700000000, 123456789 & ~0xFFFFFF)
sender_i, sender_r = 0x11223344, 0x55667788

C = HASH(b"Noise_IKpsk2_25519_ChaChaPoly_BLAKE2s")
H = HASH(C + b"WireGuard v1 zx2c4 Jason@zx2c4.com")
H = HASH(H + Sr_pub)
H = HASH(H + Ei_pub)
C = KDF(1, C, Ei_pub)[0]
C, k = KDF(2, C, DH(Ei, Sr_pub))
enc_static = AEAD(k, 0, Si_pub, H); H = HASH(H + enc_static)
C, k = KDF(2, C, DH(Si, Sr_pub))
enc_ts = AEAD(k, 0, timestamp, H); H = HASH(H + enc_ts)
init = bytes([1, 0, 0, 0]) + struct.pack("<I", sender_i) + Ei_pub + enc_static + enc_ts
init += MAC(HASH(b"mac1----" + Sr_pub), init) + bytes(16)

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
