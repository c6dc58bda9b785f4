"""WireGuard's handshake in Python, step by step as the paper has it: an independent
implementation for known-answer vectors (scripts/wireguard-vectors.py) and for driving a
server with real initiations (scripts/lib/wghandshakes.py). Needs python3-cryptography."""
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
def private_bytes(p): return p.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption())
def DH(p, pubbytes): return p.exchange(X25519PublicKey.from_public_bytes(pubbytes))
def AEAD(key, counter, plain, ad):
    return ChaCha20Poly1305(key).encrypt(b"\0\0\0\0" + struct.pack("<Q", counter), plain, ad)
def tai64n(seconds, nanoseconds):
    return struct.pack(">QI", 0x400000000000000a + seconds, nanoseconds & ~0xFFFFFF)

def initiation(Si, Sr_pub, Ei, timestamp, sender):
    """The 148-byte initiation from static Si and ephemeral Ei to responder Sr_pub (MAC2
    zero), and the chaining key and hash to continue with."""
    Si_pub, Ei_pub = raw(Si.public_key()), raw(Ei.public_key())
    C = HASH(b"Noise_IKpsk2_25519_ChaChaPoly_BLAKE2s")
    H = HASH(C + b"WireGuard v1 zx2c4 Jason@zx2c4.com")
    H = HASH(H + Sr_pub)
    H = HASH(H + Ei_pub)
    C = KDF(1, C, Ei_pub)[0]
    C, k = KDF(2, C, DH(Ei, Sr_pub))
    enc_static = AEAD(k, 0, Si_pub, H); H = HASH(H + enc_static)
    C, k = KDF(2, C, DH(Si, Sr_pub))
    enc_ts = AEAD(k, 0, timestamp, H); H = HASH(H + enc_ts)
    msg = bytes([1, 0, 0, 0]) + struct.pack("<I", sender) + Ei_pub + enc_static + enc_ts
    return msg + MAC(HASH(b"mac1----" + Sr_pub), msg) + bytes(16), C, H
