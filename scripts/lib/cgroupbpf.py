#!/usr/bin/env python3
"""cgroup BPF programs by plain bpf(2), for tests: what an admin (or an attacker with
CAP_NET_ADMIN) can do to a cgroup's programs behind vpnd's back.

usage: cgroupbpf.py attach-exclusive CGROUP   a program that allows every socket, attached
                                              at inet_sock_create WITHOUT BPF_F_ALLOW_MULTI:
                                              no other program can be attached there or below
       cgroupbpf.py detach-exclusive CGROUP   takes it off again
       cgroupbpf.py detach-all CGROUP         every program attached to the cgroup itself, at
                                              the hooks vpnd uses (create, egress, connect4/6)
       cgroupbpf.py count CGROUP [PREFIX]     how many programs are attached to the cgroup
                                              itself at any hook (named PREFIX*, if given)
CGROUP is a directory of the cgroup2 hierarchy."""
import ctypes, os, struct, sys

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
SYS_BPF = 321  # x86_64
PROG_LOAD, PROG_ATTACH, PROG_DETACH, PROG_GET_FD_BY_ID, OBJ_GET_INFO_BY_FD, PROG_QUERY = 5, 8, 9, 13, 15, 16
CGROUP_SOCK, INET_SOCK_CREATE = 9, 2
# The hooks vpnd attaches to: egress 1, create 2, connect4 10, connect6 11.
VPND_HOOKS = (1, 2, 10, 11)
ALL_HOOKS = range(0, 64)


def bpf(command, attr):
    buffer = ctypes.create_string_buffer(bytes(attr), 160)
    result = libc.syscall(SYS_BPF, command, buffer, 160)
    if result < 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))
    return result, buffer.raw


def load_allow_all():
    # r0 = 1; exit
    code = struct.pack("<BBhi", 0xb7, 0, 0, 1) + struct.pack("<BBhi", 0x95, 0, 0, 0)
    instructions = ctypes.create_string_buffer(code)
    license = ctypes.create_string_buffer(b"GPL")
    attr = struct.pack("<IIQQIIQII16sII", CGROUP_SOCK, 2, ctypes.addressof(instructions), ctypes.addressof(license),
                       0, 0, 0, 0, 0, b"vxtest_excl", 0, INET_SOCK_CREATE)
    fd, _ = bpf(PROG_LOAD, attr)
    return fd


def query(cgroup_fd, hook):
    ids = (ctypes.c_uint32 * 256)()
    # target_fd, attach_type, query_flags, attach_flags, prog_ids, prog_cnt
    attr = struct.pack("<IIIIQI", cgroup_fd, hook, 0, 0, ctypes.addressof(ids), 256)
    try:
        _, raw = bpf(PROG_QUERY, attr)
    except OSError:
        return []
    count = struct.unpack_from("<I", raw, 24)[0]
    return list(ids[:count])


def name_of(program_id):
    fd, _ = bpf(PROG_GET_FD_BY_ID, struct.pack("<I", program_id))
    info = ctypes.create_string_buffer(256)
    bpf(OBJ_GET_INFO_BY_FD, struct.pack("<IIQ", fd, 256, ctypes.addressof(info)))
    os.close(fd)
    # struct bpf_prog_info: type, id, tag[8], jited_prog_len, xlated_prog_len, jited_prog_insns,
    # xlated_prog_insns, load_time, created_by_uid, nr_map_ids, map_ids, name[16] at 64
    return info.raw[64:80].split(b"\0")[0].decode()


def main():
    command, path = sys.argv[1], sys.argv[2]
    cgroup = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    if command == "attach-exclusive":
        program = load_allow_all()
        bpf(PROG_ATTACH, struct.pack("<IIII", cgroup, program, INET_SOCK_CREATE, 0))
    elif command == "detach-exclusive":
        bpf(PROG_DETACH, struct.pack("<IIII", cgroup, 0, INET_SOCK_CREATE, 0))
    elif command == "detach-all":
        for hook in VPND_HOOKS:
            for program_id in query(cgroup, hook):
                fd, _ = bpf(PROG_GET_FD_BY_ID, struct.pack("<I", program_id))
                bpf(PROG_DETACH, struct.pack("<IIII", cgroup, fd, hook, 0))
                os.close(fd)
    elif command == "count":
        prefix = sys.argv[3] if len(sys.argv) > 3 else ""
        print(sum(1 for hook in ALL_HOOKS for program_id in query(cgroup, hook) if name_of(program_id).startswith(prefix)))
    else:
        sys.exit(__doc__)


main()
