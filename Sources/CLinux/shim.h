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
#include <sys/un.h>
#include <linux/sched.h>
#include <sys/statfs.h>
#include <linux/magic.h>

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
