#pragma once
// The bpf(2) calls behind vpnd's cgroup socket programs (Sources/Cgroups/SocketPrograms*),
// with the plain system call: no libbpf, as iproute2's `ip vrf exec` does. Swift cannot
// call the variadic syscall(2) nor fill `union bpf_attr` comfortably, so each command is a
// small function with plain arguments. Each returns what bpf(2) returns: a descriptor or 0,
// or -1 with errno.
#include <linux/bpf.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <errno.h>
#include <sys/socket.h>

static inline long vx_bpf(int command, union bpf_attr *attr) {
    return syscall(SYS_bpf, command, attr, sizeof *attr);
}

static inline int vx_bpf_map_create(uint32_t type, uint32_t key_size, uint32_t value_size, uint32_t entries, const char *name) {
    union bpf_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.map_type = type;
    attr.key_size = key_size;
    attr.value_size = value_size;
    attr.max_entries = entries;
    strncpy(attr.map_name, name, sizeof attr.map_name - 1);
    return (int)vx_bpf(BPF_MAP_CREATE, &attr);
}

/// `instructions` holds `count` instructions of 8 bytes; the verifier's words go to `log`.
static inline int vx_bpf_prog_load(uint32_t type, uint32_t expected_attach_type, const void *instructions, uint32_t count,
                                   const char *name, char *log, uint32_t log_size) {
    union bpf_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.prog_type = type;
    attr.expected_attach_type = expected_attach_type;
    attr.insns = (uint64_t)(uintptr_t)instructions;
    attr.insn_cnt = count;
    attr.license = (uint64_t)(uintptr_t)"GPL";
    attr.log_buf = (uint64_t)(uintptr_t)log;
    attr.log_size = log_size;
    attr.log_level = log_size ? 1 : 0;
    strncpy(attr.prog_name, name, sizeof attr.prog_name - 1);
    return (int)vx_bpf(BPF_PROG_LOAD, &attr);
}

/// Attached to the cgroup itself, beside whatever others attached there (multi-attach):
/// the attachment is the kernel's and lasts until it is detached or the cgroup is removed,
/// whoever loaded the program and whether it still runs.
static inline int vx_bpf_prog_attachment(int command, int program, int cgroup, uint32_t type, uint32_t flags) {
    union bpf_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.target_fd = (uint32_t)cgroup;
    attr.attach_bpf_fd = (uint32_t)program;
    attr.attach_type = type;
    attr.attach_flags = flags;
    return (int)vx_bpf(command, &attr);
}

static inline int vx_bpf_prog_attach(int program, int cgroup, uint32_t type) {
    return vx_bpf_prog_attachment(BPF_PROG_ATTACH, program, cgroup, type, BPF_F_ALLOW_MULTI);
}

static inline int vx_bpf_prog_detach(int program, int cgroup, uint32_t type) {
    return vx_bpf_prog_attachment(BPF_PROG_DETACH, program, cgroup, type, 0);
}

/// The ids of the programs attached to the cgroup itself at `type`: `*count` in, how many
/// there are out.
static inline int vx_bpf_prog_query(int cgroup, uint32_t type, uint32_t *ids, uint32_t *count) {
    union bpf_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.query.target_fd = (uint32_t)cgroup;
    attr.query.attach_type = type;
    attr.query.prog_ids = (uint64_t)(uintptr_t)ids;
    attr.query.prog_cnt = *count;
    int result = (int)vx_bpf(BPF_PROG_QUERY, &attr);
    *count = attr.query.prog_cnt;
    return result;
}

/// Needs CAP_SYS_ADMIN.
static inline int vx_bpf_prog_fd_by_id(uint32_t id) {
    union bpf_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.prog_id = id;
    return (int)vx_bpf(BPF_PROG_GET_FD_BY_ID, &attr);
}

/// Needs CAP_SYS_ADMIN.
static inline int vx_bpf_map_fd_by_id(uint32_t id) {
    union bpf_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.map_id = id;
    return (int)vx_bpf(BPF_MAP_GET_FD_BY_ID, &attr);
}

/// What the kernel says of a program or map (`info`: a struct bpf_prog_info or
/// bpf_map_info, zeroed but for the fields that ask for arrays).
static inline int vx_bpf_obj_info(int object, void *info, uint32_t length) {
    union bpf_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.info.bpf_fd = (uint32_t)object;
    attr.info.info_len = length;
    attr.info.info = (uint64_t)(uintptr_t)info;
    return (int)vx_bpf(BPF_OBJ_GET_INFO_BY_FD, &attr);
}

/// A program's name (16 bytes, NUL-padded) and the ids of the maps it uses (`*map_count`
/// in, how many it uses out).
static inline int vx_bpf_prog_info(int program, char name[16], uint32_t *map_ids, uint32_t *map_count) {
    struct bpf_prog_info info;
    memset(&info, 0, sizeof info);
    info.nr_map_ids = *map_count;
    info.map_ids = (uint64_t)(uintptr_t)map_ids;
    int result = vx_bpf_obj_info(program, &info, sizeof info);
    if (result == 0) {
        memcpy(name, info.name, 16);
        *map_count = info.nr_map_ids;
    }
    return result;
}

/// A map's type, key and value sizes and name (16 bytes, NUL-padded): what a lookup writes
/// is value_size bytes, whoever made the map.
static inline int vx_bpf_map_info(int map, uint32_t *type, uint32_t *key_size, uint32_t *value_size, char name[16]) {
    struct bpf_map_info info;
    memset(&info, 0, sizeof info);
    int result = vx_bpf_obj_info(map, &info, sizeof info);
    if (result == 0) {
        *type = info.type;
        *key_size = info.key_size;
        *value_size = info.value_size;
        memcpy(name, info.name, 16);
    }
    return result;
}

/// The kernel's id of a loaded program (what BPF_PROG_QUERY lists), or 0. Needs only the
/// descriptor.
static inline uint32_t vx_bpf_prog_id(int program) {
    struct bpf_prog_info info;
    memset(&info, 0, sizeof info);
    return vx_bpf_obj_info(program, &info, sizeof info) == 0 ? info.id : 0;
}

static inline int vx_bpf_map_update(int map, const void *key, const void *value) {
    union bpf_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.map_fd = (uint32_t)map;
    attr.key = (uint64_t)(uintptr_t)key;
    attr.value = (uint64_t)(uintptr_t)value;
    attr.flags = BPF_ANY;
    return (int)vx_bpf(BPF_MAP_UPDATE_ELEM, &attr);
}

static inline int vx_bpf_map_lookup(int map, const void *key, void *value) {
    union bpf_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.map_fd = (uint32_t)map;
    attr.key = (uint64_t)(uintptr_t)key;
    attr.value = (uint64_t)(uintptr_t)value;
    return (int)vx_bpf(BPF_MAP_LOOKUP_ELEM, &attr);
}

/// The key after `key` (NULL: the first) into `next`; -1 with ENOENT after the last.
static inline int vx_bpf_map_next_key(int map, const void *key, void *next) {
    union bpf_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.map_fd = (uint32_t)map;
    attr.key = (uint64_t)(uintptr_t)key;
    attr.next_key = (uint64_t)(uintptr_t)next;
    return (int)vx_bpf(BPF_MAP_GET_NEXT_KEY, &attr);
}

/// A BPF link: the attachment lives exactly as long as the link's descriptors (closing the
/// last one detaches), unlike the kernel-held cgroup attachments above. `target` is what
/// the attach type names: a network namespace's descriptor for BPF_SK_LOOKUP.
static inline int vx_bpf_link_create(int program, int target, uint32_t attach_type) {
    union bpf_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.link_create.prog_fd = (uint32_t)program;
    attr.link_create.target_fd = (uint32_t)target;
    attr.link_create.attach_type = attach_type;
    return (int)vx_bpf(BPF_LINK_CREATE, &attr);
}

// Where the programs read and write their context (uapi structs: stable ABI).
enum {
    VX_SOCK_MARK = offsetof(struct bpf_sock, mark),
    VX_SKB_MARK = offsetof(struct __sk_buff, mark),
    VX_ADDR_USER_IP4 = offsetof(struct bpf_sock_addr, user_ip4),
    VX_ADDR_USER_IP6 = offsetof(struct bpf_sock_addr, user_ip6),
    VX_ADDR_USER_PORT = offsetof(struct bpf_sock_addr, user_port),
    VX_SK_LOOKUP_FAMILY = offsetof(struct bpf_sk_lookup, family),
    VX_SK_LOOKUP_PROTOCOL = offsetof(struct bpf_sk_lookup, protocol),
    VX_SK_LOOKUP_REMOTE_IP4 = offsetof(struct bpf_sk_lookup, remote_ip4),
    VX_SK_LOOKUP_REMOTE_IP6 = offsetof(struct bpf_sk_lookup, remote_ip6),
    VX_SK_LOOKUP_LOCAL_PORT = offsetof(struct bpf_sk_lookup, local_port),
};

/// The cookie of the calling thread's network namespace (SO_NETNS_COOKIE, Linux 5.14): a
/// 64-bit id never used again; 0 if the kernel cannot tell.
/* A Unix socket: no cgroup socket program runs for one (the path guard of an earlier vpnd
 * could refuse an internet socket), and any socket tells its namespace. 0 (never a
 * cookie) with errno on failure. */
static inline uint64_t vx_netns_cookie(void) {
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return 0;
    uint64_t cookie = 0;
    socklen_t length = sizeof cookie;
    if (getsockopt(fd, SOL_SOCKET, 71 /* SO_NETNS_COOKIE */, &cookie, &length) != 0) cookie = 0;
    int saved = errno;
    close(fd);
    errno = saved;
    return cookie;
}

#include <pthread.h>
#include <sched.h>
#include <fcntl.h>

struct vx_netns_cookie_job { const int *fds; int count; uint64_t *cookies; };

static inline void *vx_netns_cookies_thread(void *argument) {
    struct vx_netns_cookie_job *job = (struct vx_netns_cookie_job *)argument;
    for (int i = 0; i < job->count; i++) {
        job->cookies[i] = setns(job->fds[i], CLONE_NEWNET) == 0 ? vx_netns_cookie() : 0;
    }
    return NULL;
}

/// The cookie of each network namespace `fds` name (nsfs descriptors; 0 where one cannot be
/// entered: not a network namespace, or no CAP_SYS_ADMIN), read on a thread of its own
/// that enters each in turn and then ends, so that the caller's threads never leave their
/// namespace. Returns 0, or -1 if the thread could not run.
static inline int vx_netns_cookies(const int *fds, int count, uint64_t *cookies) {
    struct vx_netns_cookie_job job = { fds, count, cookies };
    pthread_t thread;
    if (pthread_create(&thread, NULL, vx_netns_cookies_thread, &job) != 0) return -1;
    return pthread_join(thread, NULL) == 0 ? 0 : -1;
}

static inline int vx_bpf_map_delete(int map, const void *key) {
    union bpf_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.map_fd = (uint32_t)map;
    attr.key = (uint64_t)(uintptr_t)key;
    return (int)vx_bpf(BPF_MAP_DELETE_ELEM, &attr);
}
