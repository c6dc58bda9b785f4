#pragma once
// Linux calls and constants that Glibc's Swift module leaves out (glibc hides them behind
// _GNU_SOURCE, they are newer than the headers, or they are macros). _GNU_SOURCE itself
// is not defined here: it changes struct layouts that other modules import too.
#include <signal.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/inotify.h>
#include <sys/epoll.h>
#include <sys/un.h>
#include <linux/sched.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <malloc.h>
#include "cgroup_programs.h"

extern int setns(int fd, int nstype);
extern int accept4(int fd, struct sockaddr *addr, socklen_t *addrlen, int flags);
static inline int vx_accept4(int fd, int flags) { return accept4(fd, NULL, NULL, flags); }
extern int unshare(int flags);

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

static inline int vx_setns(int fd, int nstype) { return setns(fd, nstype); }
static inline int vx_clone_newnet(void) { return CLONE_NEWNET; }
static inline int vx_clone_newns(void) { return CLONE_NEWNS; }
static inline int vx_unshare(int flags) { return unshare(flags); }

/// A pidfd for a pid (Linux 5.3): refers to exactly one process, never a reused pid.
static inline int vx_pidfd_open(pid_t pid) { return (int)syscall(SYS_pidfd_open, pid, 0); }
static inline int vx_pidfd_send_signal(int pidfd, int sig) { return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0); }

/// getrandom(2), which glibc declares in a header the Swift module leaves out.
static inline long vx_getrandom(void *buffer, size_t length) { return syscall(SYS_getrandom, buffer, length, 0); }

static inline int vx_so_peerpidfd(void) { return SO_PEERPIDFD; }
static inline int vx_so_peergroups(void) { return SO_PEERGROUPS; }

static inline int vx_set_no_new_privs(void) { return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); }

/// struct ucred as SO_PEERCRED fills it (glibc declares it only under _GNU_SOURCE).
struct vx_ucred { pid_t pid; uid_t uid; gid_t gid; };
static inline int vx_peer_credentials(int fd, struct vx_ucred *out) {
    socklen_t len = sizeof(*out);
    return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, out, &len);
}

/// Whether `path` is the mount point of a cgroup v2 file system (statfs magic).
static inline int vx_is_cgroup2(const char *path) {
    struct statfs info;
    return statfs(path, &info) == 0 && info.f_type == CGROUP2_SUPER_MAGIC;
}

// --- TUN devices and batched UDP for the tunnel engine ---
#include <fcntl.h>
#include <sys/ioctl.h>
#include <linux/if_tun.h>
#include <netinet/in.h>
#include <string.h>
#include <time.h>

/// struct ifreq as TUNSETIFF reads it (name, flags, padding to the union's size), declared
/// here so this header needs neither <net/if.h> nor <linux/if.h>, which clash.
struct vx_ifreq { char name[16]; short flags; char pad[22]; };

/// Attaches `fd` (an open /dev/net/tun) to the TUN interface `name` (created if missing;
/// "" lets the kernel pick tunN), without packet information and optionally with virtio-net
/// headers. The final name is written to `out` (16 bytes). Returns -1 with errno on failure.
static inline int vx_tun_attach(int fd, const char *name, int vnet_hdr, char *out) {
    struct vx_ifreq r;
    memset(&r, 0, sizeof r);
    strncpy(r.name, name, 15);
    r.flags = IFF_TUN | IFF_NO_PI | (vnet_hdr ? IFF_VNET_HDR : 0);
    if (ioctl(fd, TUNSETIFF, &r) < 0) return -1;
    memcpy(out, r.name, 16);
    out[15] = 0;
    return 0;
}

/// TUNSETPERSIST: whether the interface stays when its last descriptor closes.
static inline int vx_tun_persist(int fd, int on) { return ioctl(fd, TUNSETPERSIST, (unsigned long)on); }
/// TUNSETOWNER: only this user (or CAP_NET_ADMIN) may attach. A TUN with neither owner nor
/// group may be attached to by anyone who can open /dev/net/tun.
static inline int vx_tun_set_owner(int fd, unsigned int uid) { return ioctl(fd, TUNSETOWNER, (unsigned long)uid); }

/// TUNSETOFFLOAD: which offloads the kernel may hand us (TUN_F_CSUM | TUN_F_TSO4 | ...).
static inline int vx_tun_set_offload(int fd, unsigned int flags) { return ioctl(fd, TUNSETOFFLOAD, flags); }
static inline int vx_tun_set_vnet_hdr_size(int fd, int size) { return ioctl(fd, TUNSETVNETHDRSZ, &size); }
static inline unsigned int vx_tun_f_csum(void) { return TUN_F_CSUM; }
static inline unsigned int vx_tun_f_tso4(void) { return TUN_F_TSO4; }
static inline unsigned int vx_tun_f_tso6(void) { return TUN_F_TSO6; }
/// UDP segmentation offload on TUN (Linux 6.2), newer than Debian 12's headers.
static inline unsigned int vx_tun_f_uso4(void) { return 0x20; }
static inline unsigned int vx_tun_f_uso6(void) { return 0x40; }

/// struct mmsghdr, which glibc declares only under _GNU_SOURCE; same layout as the kernel's.
struct vx_mmsghdr { struct msghdr msg_hdr; unsigned int msg_len; };

static inline int vx_recvmmsg(int fd, struct vx_mmsghdr *v, unsigned int n, int flags) {
    return (int)syscall(SYS_recvmmsg, fd, v, n, flags, NULL);
}
static inline int vx_sendmmsg(int fd, struct vx_mmsghdr *v, unsigned int n, int flags) {
    return (int)syscall(SYS_sendmmsg, fd, v, n, flags);
}
static inline int vx_msg_waitforone(void) { return MSG_WAITFORONE; }
static inline int vx_so_mark(void) { return SO_MARK; }

// --- The DNS proxy's steering socket (DNSRouting): the address a query was sent to, its
// mark, and the reply sent from that address ---
#include <netinet/in.h>
#ifndef IP_TRANSPARENT
#define IP_TRANSPARENT 19
#endif
#ifndef IP_PKTINFO
#define IP_PKTINFO 8
#endif
/// struct in_pktinfo and struct in6_pktinfo, which glibc declares only under _GNU_SOURCE;
/// the kernel's layouts.
struct vx_in_pktinfo { int ipi_ifindex; uint32_t ipi_spec_dst; uint32_t ipi_addr; };
struct vx_in6_pktinfo { uint8_t ipi6_addr[16]; int ipi6_ifindex; };

/// Room for the control messages a steered query comes with: the packet info of either
/// family and SO_MARK.
static inline size_t vx_steered_cmsg_space(void) { return CMSG_SPACE(sizeof(struct vx_in6_pktinfo)) + CMSG_SPACE(sizeof(uint32_t)); }

/// SO_RCVMARK (Linux 5.19): each datagram's mark as a control message (type SO_MARK).
static inline int vx_so_rcvmark(void) { return 75; }
static inline int vx_ip_transparent(void) { return IP_TRANSPARENT; }
static inline int vx_ip_pktinfo(void) { return IP_PKTINFO; }
/// IPV6_TRANSPARENT and IPV6_RECVPKTINFO, which glibc's headers give only under _GNU_SOURCE.
static inline int vx_ipv6_transparent(void) { return 75; }
static inline int vx_ipv6_recvpktinfo(void) { return 49; }

/// From recvmsg's control messages: the address the datagram was sent to (`asked`, 16
/// bytes: an IPv4 address in its first 4, network order) and its mark. Each is set only
/// when its message is there; returns which were found (1: an IPv4 address, 4: an IPv6
/// address, 2: the mark).
static inline int vx_steered_cmsgs(struct msghdr *m, uint8_t *asked, uint32_t *mark) {
    int found = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
        if (c->cmsg_level == SOL_IP && c->cmsg_type == IP_PKTINFO && c->cmsg_len >= CMSG_LEN(sizeof(struct vx_in_pktinfo))) {
            struct vx_in_pktinfo info;
            memcpy(&info, CMSG_DATA(c), sizeof info);
            memcpy(asked, &info.ipi_addr, 4);
            found |= 1;
        } else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO && c->cmsg_len >= CMSG_LEN(sizeof(struct vx_in6_pktinfo))) {
            struct vx_in6_pktinfo info;
            memcpy(&info, CMSG_DATA(c), sizeof info);
            memcpy(asked, info.ipi6_addr, 16);
            found |= 4;
        } else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_MARK && c->cmsg_len >= CMSG_LEN(sizeof(uint32_t))) {
            memcpy(mark, CMSG_DATA(c), sizeof *mark);
            found |= 2;
        }
    }
    return found;
}

/// One control message of `length` bytes of `data` at `buffer`; returns its space.
static inline size_t vx_put_cmsg(void *buffer, int level, int type, const void *data, size_t length) {
    memset(buffer, 0, CMSG_SPACE(length));
    struct cmsghdr *c = (struct cmsghdr *)buffer;
    c->cmsg_level = level;
    c->cmsg_type = type;
    c->cmsg_len = CMSG_LEN(length);
    memcpy(CMSG_DATA(c), data, length);
    return CMSG_SPACE(length);
}

/// Writes a packet-info control message that sends from `source` into `buffer`
/// (vx_steered_cmsg_space() bytes): IP_PKTINFO's ipi_spec_dst for 4 bytes of address
/// (network order), IPV6_PKTINFO's ipi6_addr for 16. Returns the msg_controllen to use.
static inline size_t vx_source_cmsg(void *buffer, const uint8_t *source, size_t length) {
    if (length == 16) {
        struct vx_in6_pktinfo info;
        memset(&info, 0, sizeof info);
        memcpy(info.ipi6_addr, source, 16);
        return vx_put_cmsg(buffer, IPPROTO_IPV6, IPV6_PKTINFO, &info, sizeof info);
    }
    struct vx_in_pktinfo info;
    memset(&info, 0, sizeof info);
    memcpy(&info.ipi_spec_dst, source, 4);
    return vx_put_cmsg(buffer, IPPROTO_IP, IP_PKTINFO, &info, sizeof info);
}

// --- UDP segmentation (GSO) and receive coalescing (GRO) for the tunnel's socket ---
#include <netinet/udp.h>

/// Room for one UDP_SEGMENT or UDP_GRO control message (the larger, an int).
static inline size_t vx_udp_offload_cmsg_space(void) { return CMSG_SPACE(sizeof(int)); }

/// Writes a UDP_SEGMENT control message (the size of each segment but the last) into
/// `buffer` (vx_udp_offload_cmsg_space() bytes) and returns the msg_controllen to use.
static inline size_t vx_udp_segment_cmsg(void *buffer, uint16_t segment) {
    memset(buffer, 0, CMSG_SPACE(sizeof(uint16_t)));
    struct cmsghdr *c = (struct cmsghdr *)buffer;
    c->cmsg_level = SOL_UDP;
    c->cmsg_type = UDP_SEGMENT;
    c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
    memcpy(CMSG_DATA(c), &segment, sizeof segment);
    return CMSG_SPACE(sizeof(uint16_t));
}

/// The segment size of a coalesced datagram, from recvmsg's control messages; 0 when the
/// datagram arrived as one.
static inline int vx_udp_gro_size(struct msghdr *m) {
    for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
        if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
            int size;
            memcpy(&size, CMSG_DATA(c), sizeof size);
            return size;
        }
    }
    return 0;
}

/// Asks the kernel to hand us coalesced datagrams (UDP_GRO); 0 on success.
static inline int vx_udp_enable_gro(int fd) {
    int one = 1;
    return setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof one);
}

/// Whether the kernel knows UDP_SEGMENT (Linux 4.18): reading it works where it exists.
static inline int vx_udp_segment_supported(int fd) {
    int size = 0;
    socklen_t length = sizeof size;
    return getsockopt(fd, SOL_UDP, UDP_SEGMENT, &size, &length) == 0;
}

#include <pthread.h>
extern int pthread_setname_np(pthread_t thread, const char *name);
static inline int vx_pthread_setname(pthread_t thread, const char *name) { return pthread_setname_np(thread, name); }

#include <sys/eventfd.h>

// --- passing a descriptor over a Unix socket (SCM_RIGHTS); CMSG_* are macros ---

/// Sends `length` bytes and, if `fd` >= 0, the descriptor with them (one sendmsg).
static inline ssize_t vx_send_with_fd(int sock, const void *bytes, size_t length, int fd) {
    struct iovec iov = { (void *)bytes, length };
    union { struct cmsghdr header; char space[CMSG_SPACE(sizeof(int))]; } control;
    struct msghdr msg;
    memset(&msg, 0, sizeof msg);
    memset(&control, 0, sizeof control);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (fd >= 0) {
        msg.msg_control = control.space;
        msg.msg_controllen = sizeof control.space;
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof(int));
    }
    return sendmsg(sock, &msg, MSG_NOSIGNAL);
}

/// Receives up to `length` bytes (non-blocking) and the descriptors sent with them: up to
/// `max_fds` land in `fds` (close-on-exec), the count in `*nfds`; any beyond are closed.
static inline ssize_t vx_recv_with_fds(int sock, void *bytes, size_t length, int *fds, int max_fds, int *nfds) {
    struct iovec iov = { bytes, length };
    union { struct cmsghdr header; char space[CMSG_SPACE(sizeof(int) * 8)]; } control;
    struct msghdr msg;
    memset(&msg, 0, sizeof msg);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.space;
    msg.msg_controllen = sizeof control.space;
    *nfds = 0;
    ssize_t n = recvmsg(sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0) return n;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        int count = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        for (int i = 0; i < count; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
            if (*nfds < max_fds) fds[(*nfds)++] = fd; else close(fd);
        }
    }
    return n;
}

// --- Landlock (Linux 5.13+): the process confines its own file system (and TCP) access.
// Declared here rather than from <linux/landlock.h>: older headers lack the later fields.
#include <stdint.h>
struct vx_landlock_ruleset_attr { uint64_t handled_access_fs; uint64_t handled_access_net; uint64_t scoped; };
struct vx_landlock_path_beneath_attr { uint64_t allowed_access; int32_t parent_fd; } __attribute__((packed));

/// The kernel's Landlock ABI version, or -1 (errno ENOSYS/EOPNOTSUPP) without Landlock.
static inline int vx_landlock_abi(void) { return (int)syscall(444, NULL, 0, 1UL); }
/// A ruleset handling these rights; `size` picks how much of the struct the kernel reads
/// (ABI 1-3: the fs field only, 4-5: fs and net, 6+: all three).
static inline int vx_landlock_create_ruleset(const struct vx_landlock_ruleset_attr *attr, size_t size) {
    return (int)syscall(444, attr, size, 0UL);
}
static inline int vx_landlock_allow_beneath(int ruleset, int fd, uint64_t access) {
    struct vx_landlock_path_beneath_attr rule = { access, fd };
    return (int)syscall(445, ruleset, 1 /* LANDLOCK_RULE_PATH_BENEATH */, &rule, 0UL);
}
static inline int vx_landlock_restrict_self(int ruleset) { return (int)syscall(446, ruleset, 0UL); }

// --- the process inspector (its filter and loop are in inspector.h) ---
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/audit.h>
#include <stddef.h>
#include <stdio.h>

static inline int vx_set_parent_death_signal(int sig) { return prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0); }
/// Allows `access` (LANDLOCK_ACCESS_NET_BIND_TCP 1, _CONNECT_TCP 2) on one TCP port (ABI 4).
static inline int vx_landlock_allow_port(int ruleset, uint16_t port, uint64_t access) {
    struct { uint64_t allowed_access; uint64_t port; } rule = { access, port };
    return (int)syscall(445, ruleset, 2 /* LANDLOCK_RULE_NET_PORT */, &rule, 0UL);
}

// --- the process inspector (vpnd's helper with CAP_SYS_PTRACE) ---
#include "inspector.h"
