#!/usr/bin/env python3
"""Runs a command as if on a kernel without SO_PEERPIDFD (Linux before 6.5, e.g. Debian
12's 6.1): a seccomp filter makes getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD) fail with
ENOPROTOOPT, exactly what such a kernel answers; every other call is untouched.

usage: no-peerpidfd.py COMMAND [ARGS...]"""
import ctypes, errno, os, platform, struct, sys

# (audit architecture, getsockopt's number) per machine.
ARCHES = {"x86_64": (0xC000003E, 55), "aarch64": (0xC00000B7, 209)}
arch, nr_getsockopt = ARCHES[platform.machine()]
SOL_SOCKET, SO_PEERPIDFD = 1, 77

BPF_LD_W_ABS, BPF_JEQ_K, BPF_RET_K = 0x20, 0x15, 0x06
SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO = 0x7FFF0000, 0x00050000

def stmt(code, k): return struct.pack("HBBI", code, 0, 0, k)
def jump(code, k, jt, jf): return struct.pack("HBBI", code, jt, jf, k)

# struct seccomp_data: nr @0, arch @4, ip @8, args[i] @16+8i (low 32 bits first on LE).
program = b"".join([
    stmt(BPF_LD_W_ABS, 4), jump(BPF_JEQ_K, arch, 0, 7),
    stmt(BPF_LD_W_ABS, 0), jump(BPF_JEQ_K, nr_getsockopt, 0, 5),
    stmt(BPF_LD_W_ABS, 24), jump(BPF_JEQ_K, SOL_SOCKET, 0, 3),
    stmt(BPF_LD_W_ABS, 32), jump(BPF_JEQ_K, SO_PEERPIDFD, 0, 1),
    stmt(BPF_RET_K, SECCOMP_RET_ERRNO | errno.ENOPROTOOPT),
    stmt(BPF_RET_K, SECCOMP_RET_ALLOW),
])
count = len(program) // 8
buffer = ctypes.create_string_buffer(program, len(program))

class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

libc = ctypes.CDLL(None, use_errno=True)
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
fprog = SockFprog(count, ctypes.addressof(buffer))
if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
    sys.exit("seccomp: " + os.strerror(ctypes.get_errno()))
os.execvp(sys.argv[1], sys.argv[1:])
