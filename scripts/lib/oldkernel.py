#!/usr/bin/env python3
"""Runs a command as if on a kernel without a feature, through a seccomp filter that makes
the one call the feature needs fail as such a kernel answers it; every other call is
untouched. Features:
  peerpidfd  SO_PEERPIDFD (Linux before 6.5, e.g. Debian 12's 6.1):
             getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD) fails with ENOPROTOOPT
  fanotify   fanotify permission events (built without CONFIG_FANOTIFY_ACCESS_PERMISSIONS):
             fanotify_init fails with EINVAL, what such a kernel answers for FAN_CLASS_CONTENT

usage: oldkernel.py FEATURE COMMAND [ARGS...]"""
import ctypes, errno, os, platform, struct, sys

# audit architecture, and the numbers of getsockopt and fanotify_init, per machine.
ARCHES = {"x86_64": (0xC000003E, 55, 300), "aarch64": (0xC00000B7, 209, 262)}
arch, nr_getsockopt, nr_fanotify_init = ARCHES[platform.machine()]
SOL_SOCKET, SO_PEERPIDFD = 1, 77

BPF_LD_W_ABS, BPF_JEQ_K, BPF_RET_K = 0x20, 0x15, 0x06
SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO = 0x7FFF0000, 0x00050000

def stmt(code, k): return struct.pack("HBBI", code, 0, 0, k)
def jump(code, k, jt, jf): return struct.pack("HBBI", code, jt, jf, k)

def refusing(checks, error):
    """A filter that fails the call with `error` when every (offset, value) in `checks`
    matches. struct seccomp_data: nr @0, arch @4, ip @8, args[i] @16+8i (low 32 bits first
    on little-endian machines)."""
    checks = [(4, arch)] + checks
    program = []
    for index, (offset, value) in enumerate(checks):
        remaining = len(checks) - index - 1
        program += [stmt(BPF_LD_W_ABS, offset), jump(BPF_JEQ_K, value, 0, 2 * remaining + 1)]
    program += [stmt(BPF_RET_K, SECCOMP_RET_ERRNO | error), stmt(BPF_RET_K, SECCOMP_RET_ALLOW)]
    return b"".join(program)

FEATURES = {
    "peerpidfd": refusing([(0, nr_getsockopt), (24, SOL_SOCKET), (32, SO_PEERPIDFD)], errno.ENOPROTOOPT),
    "fanotify": refusing([(0, nr_fanotify_init)], errno.EINVAL),
}
if len(sys.argv) < 3 or sys.argv[1] not in FEATURES:
    sys.exit(__doc__)
program = FEATURES[sys.argv[1]]
buffer = ctypes.create_string_buffer(program, len(program))

class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

libc = ctypes.CDLL(None, use_errno=True)
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
fprog = SockFprog(len(program) // 8, ctypes.addressof(buffer))
if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
    sys.exit("seccomp: " + os.strerror(ctypes.get_errno()))
os.execvp(sys.argv[2], sys.argv[2:])
