#pragma once
// A cgroup socket program that gives every socket made in a cgroup a mark at creation
// (BPF_PROG_TYPE_CGROUP_SOCK at BPF_CGROUP_INET_SOCK_CREATE, writing bpf_sock.mark), with
// the plain bpf(2) system call: no libbpf, as iproute2's `ip vrf exec` does.
// One program serves every cgroup: the mark is data, in cgroup storage (one u32 per
// cgroup the program is attached to), so a changed mark is a map update, not a new
// program, and only loading needs CAP_BPF (with CAP_NET_ADMIN for the mark).
#include <linux/bpf.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>

static inline long vx_bpf(int command, union bpf_attr *attr) {
    return syscall(SYS_bpf, command, attr, sizeof *attr);
}

/// The cgroup storage that holds each attached cgroup's mark; -1 with errno.
static inline int vx_socket_mark_storage(void) {
    union bpf_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.map_type = BPF_MAP_TYPE_CGROUP_STORAGE;
    attr.key_size = sizeof(struct bpf_cgroup_storage_key);
    attr.value_size = sizeof(uint32_t);
    return (int)vx_bpf(BPF_MAP_CREATE, &attr);
}

/// Loads the program; -1 with errno (the verifier's words in `log`, `log_size` bytes).
/// What it does, for each new socket: if the socket has no mark yet, it gets the mark
/// stored for the cgroup this copy of the program is attached to. With several cgroups
/// on the way up attached, the deepest cgroup's program runs first, so the deepest wins.
///   r6 = ctx; r0 = get_local_storage(storage, 0);
///   if ctx->mark == 0: ctx->mark = *(u32 *)r0;  return 1 (allow the socket)
static inline int vx_socket_mark_program(int storage, char *log, uint32_t log_size) {
    const int16_t mark = (int16_t)offsetof(struct bpf_sock, mark);
    struct bpf_insn insns[] = {
        { BPF_ALU64 | BPF_MOV | BPF_X, 6, 1, 0, 0 },
        { BPF_LD | BPF_DW | BPF_IMM, 1, BPF_PSEUDO_MAP_FD, 0, storage },
        { 0, 0, 0, 0, 0 },
        { BPF_ALU64 | BPF_MOV | BPF_K, 2, 0, 0, 0 },
        { BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_get_local_storage },
        { BPF_LDX | BPF_MEM | BPF_W, 1, 6, mark, 0 },
        { BPF_JMP | BPF_JNE | BPF_K, 1, 0, 2, 0 },
        { BPF_LDX | BPF_MEM | BPF_W, 1, 0, 0, 0 },
        { BPF_STX | BPF_MEM | BPF_W, 6, 1, mark, 0 },
        { BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 1 },
        { BPF_JMP | BPF_EXIT, 0, 0, 0, 0 },
    };
    union bpf_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.prog_type = BPF_PROG_TYPE_CGROUP_SOCK;
    attr.expected_attach_type = BPF_CGROUP_INET_SOCK_CREATE;
    attr.insns = (uint64_t)(uintptr_t)insns;
    attr.insn_cnt = sizeof insns / sizeof insns[0];
    attr.license = (uint64_t)(uintptr_t)"GPL";
    attr.log_buf = (uint64_t)(uintptr_t)log;
    attr.log_size = log_size;
    attr.log_level = log_size ? 1 : 0;
    return (int)vx_bpf(BPF_PROG_LOAD, &attr);
}

/// Attaches the program to the cgroup open at `cgroup` as a BPF link (multi-attach:
/// programs others attached stay); the attachment lasts while the link's descriptor is
/// open. -1 with errno.
static inline int vx_socket_mark_link(int program, int cgroup) {
    union bpf_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.link_create.prog_fd = (uint32_t)program;
    attr.link_create.target_fd = (uint32_t)cgroup;
    attr.link_create.attach_type = BPF_CGROUP_INET_SOCK_CREATE;
    return (int)vx_bpf(BPF_LINK_CREATE, &attr);
}

/// The mark for sockets made in the cgroup with this id (the program must be attached
/// there already: the storage exists from the attachment on). 0 or -1 with errno.
static inline int vx_socket_mark_set(int storage, uint64_t cgroup_id, uint32_t mark) {
    struct bpf_cgroup_storage_key key = { cgroup_id, BPF_CGROUP_INET_SOCK_CREATE };
    union bpf_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.map_fd = (uint32_t)storage;
    attr.key = (uint64_t)(uintptr_t)&key;
    attr.value = (uint64_t)(uintptr_t)&mark;
    attr.flags = BPF_ANY;
    return (int)vx_bpf(BPF_MAP_UPDATE_ELEM, &attr);
}
