#pragma once
// vpnd's process inspector: the helper that keeps CAP_SYS_PTRACE (Daemon/ExecutableReader).
// It answers two questions about other processes, which vpnd's Landlock domain may not ask
// itself: which program a process runs (/proc/PID/exe), and which processes hold a TUN
// device, with the inodes of their sockets (the fds under /proc/PID/fd, the device's name
// by TUNGETIFF on a copy of the fd taken with pidfd_getfd). Everything here is C so that
// nothing between two system calls can need another (a Swift runtime lock, malloc).
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/if_tun.h>
#include <linux/seccomp.h>

struct vx_dirent64 { uint64_t d_ino; int64_t d_off; unsigned short d_reclen; unsigned char d_type; char d_name[]; };

/// "PID IFNAME INODE INODE...\n" for each TUN device process `pid` holds (nothing if none),
/// appended at `out` within `cap` bytes; returns the bytes written. The pidfd is taken
/// first: if the pid is reused meanwhile, the copies of its fds fail instead of naming
/// another process's device.
static inline size_t vx_tun_holder_lines(int pid, char *out, size_t cap) {
    char path[48], target[64], entries[4096];
    int pidfd = (int)syscall(434 /* pidfd_open */, pid, 0);
    if (pidfd < 0) return 0;
    snprintf(path, sizeof path, "/proc/%d/fd", pid);
    int dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) { close(pidfd); return 0; }
    int tuns[16], ntuns = 0, nsockets = 0;
    unsigned long long sockets[256];
    for (;;) {
        long n = syscall(SYS_getdents64, dir, entries, sizeof entries);
        if (n <= 0) break;
        for (long offset = 0; offset < n;) {
            struct vx_dirent64 *entry = (struct vx_dirent64 *)(entries + offset);
            offset += entry->d_reclen;
            if (entry->d_name[0] == '.') continue;
            ssize_t length = readlinkat(dir, entry->d_name, target, sizeof target - 1);
            if (length <= 0) continue;
            target[length] = 0;
            if (strcmp(target, "/dev/net/tun") == 0) {
                if (ntuns < 16) tuns[ntuns++] = atoi(entry->d_name);
            } else if (strncmp(target, "socket:[", 8) == 0) {
                if (nsockets < 256) sockets[nsockets++] = strtoull(target + 8, NULL, 10);
            }
        }
    }
    close(dir);
    size_t used = 0;
    for (int i = 0; i < ntuns; i++) {
        int copy = (int)syscall(438 /* pidfd_getfd */, pidfd, tuns[i], 0);
        if (copy < 0) continue;
        struct { char name[16]; char rest[24]; } request;
        memset(&request, 0, sizeof request);
        int named = ioctl(copy, TUNGETIFF, &request) == 0;
        close(copy);
        if (!named) continue;
        request.name[15] = 0;
        size_t start = used;
        int n = snprintf(out + used, cap - used, "%d %s", pid, request.name);
        if (n < 0 || (size_t)n >= cap - used) return start;
        used += (size_t)n;
        for (int s = 0; s < nsockets; s++) {
            n = snprintf(out + used, cap - used, " %llu", sockets[s]);
            if (n < 0 || (size_t)n >= cap - used) return start;
            used += (size_t)n;
        }
        if (used + 1 >= cap) return start;
        out[used++] = '\n';
    }
    close(pidfd);
    return used;
}

/// The same for every process (the thread group leaders /proc lists).
static inline size_t vx_tun_holders(char *out, size_t cap) {
    char entries[4096];
    int proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (proc < 0) return 0;
    size_t used = 0;
    for (;;) {
        long n = syscall(SYS_getdents64, proc, entries, sizeof entries);
        if (n <= 0) break;
        for (long offset = 0; offset < n;) {
            struct vx_dirent64 *entry = (struct vx_dirent64 *)(entries + offset);
            offset += entry->d_reclen;
            if (entry->d_name[0] < '1' || entry->d_name[0] > '9') continue;
            used += vx_tun_holder_lines(atoi(entry->d_name), out + used, cap - used);
        }
    }
    close(proc);
    return used;
}

#define VX_ARG_LOW(n) (offsetof(struct seccomp_data, args) + (n) * 8)
/// Allows system call `nr`.
#define VX_ALLOW(nr) \
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
/// Allows `nr` when the low word of argument `n` is `value`, else kills.
#define VX_ALLOW_IF(nr, n, value) \
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 4), BPF_STMT(BPF_LD | BPF_W | BPF_ABS, VX_ARG_LOW(n)), \
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, value, 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW), \
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS)
/// Allows `nr` when the low word of argument `n` is not `value`, else kills.
#define VX_ALLOW_UNLESS(nr, n, value) \
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 4), BPF_STMT(BPF_LD | BPF_W | BPF_ABS, VX_ARG_LOW(n)), \
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, value, 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS), \
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
/// Allows `nr` when argument `n` masked with `mask` is `value`, else kills.
#define VX_ALLOW_MASKED(nr, n, mask, value) \
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 5), BPF_STMT(BPF_LD | BPF_W | BPF_ABS, VX_ARG_LOW(n)), \
    BPF_STMT(BPF_ALU | BPF_AND | BPF_K, mask), \
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, value, 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW), \
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS)

/// The inspector's confinement; anything else kills it. It talks to vpnd only over `sock`
/// (read and write on that descriptor alone, which it may not close, so no other file can
/// take its number), opens directories only (O_DIRECTORY, read-only: no file's contents,
/// /proc/PID/mem and environ included, can be read), lists them and reads links, and may
/// copy another process's descriptor only to ask a TUN device its name (the one ioctl
/// allowed) and close it. Needs no_new_privs set first. Returns 0 or -1 with errno.
static inline int vx_seccomp_inspector(int sock) {
#if defined(__x86_64__)
    const unsigned int arch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
    const unsigned int arch = AUDIT_ARCH_AARCH64;
#else
    errno = ENOSYS;
    return -1;
#endif
    const unsigned int openMask = O_DIRECTORY | O_ACCMODE | O_CREAT | O_TRUNC | O_APPEND | 020000000 /* __O_TMPFILE */;
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        // Each block returns once its system call matched, so A still holds nr after it.
        VX_ALLOW_IF(__NR_read, 0, (unsigned int)sock),
        VX_ALLOW_IF(__NR_write, 0, (unsigned int)sock),
        VX_ALLOW_UNLESS(__NR_close, 0, (unsigned int)sock),
        VX_ALLOW_MASKED(__NR_openat, 2, openMask, O_DIRECTORY),
        VX_ALLOW_IF(__NR_ioctl, 1, (unsigned int)TUNGETIFF),
        VX_ALLOW(__NR_readlinkat),
        VX_ALLOW(__NR_getdents64),
        VX_ALLOW(434 /* pidfd_open */),
        VX_ALLOW(438 /* pidfd_getfd */),
        VX_ALLOW(__NR_exit_group),
        VX_ALLOW(__NR_exit),
        VX_ALLOW(__NR_rt_sigreturn),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
    };
    struct sock_fprog program = { (unsigned short)(sizeof filter / sizeof filter[0]), filter };
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program, 0, 0);
}

/// The inspector's loop: reads a request (4 bytes) and answers with the request (so a late
/// answer is never taken for the next one's), a length (4 bytes) and that many bytes: for a pid > 0 the target of /proc/PID/exe (length 0 when it cannot be
/// read); for 0 the TUN holders of every process, for -PID those of that process
/// (vx_tun_holder_lines). Returns when vpnd closes its end.
static inline void vx_inspector_loop(int sock) {
    static char answer[1 << 16];
    char path[32];
    for (;;) {
        int32_t request;
        if (read(sock, &request, sizeof request) != sizeof request) return;
        ssize_t length = -1;
        if (request > 0) {
            int n = snprintf(path, sizeof path, "/proc/%d/exe", (int)request);
            length = n > 0 ? readlinkat(AT_FDCWD, path, answer, 4096) : -1;
        } else if (request == 0) {
            length = (ssize_t)vx_tun_holders(answer, sizeof answer);
        } else if (request > -0x7fffffff) {
            length = (ssize_t)vx_tun_holder_lines(-(int)request, answer, sizeof answer);
        }
        uint32_t reply = length > 0 ? (uint32_t)length : 0;
        if (write(sock, &request, sizeof request) != sizeof request) return;
        if (write(sock, &reply, sizeof reply) != sizeof reply) return;
        if (reply && write(sock, answer, reply) != (ssize_t)reply) return;
    }
}
