#pragma once
// fanotify permission events on exec (FAN_OPEN_EXEC_PERM, Linux 5.0): the kernel holds an
// execve of a marked file until the group answers. vpnd's exec rules use it to place a
// listed program before its first instruction (Daemon/ExecutableGuard.swift).
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>
#include <sys/fanotify.h>

/// A group of class FAN_CLASS_CONTENT (permission events; needs CAP_SYS_ADMIN here, and
/// only here) whose queue has no limit: a full queue would let a permission event through
/// unanswered. Events carry a read-only descriptor of the file.
static inline int vx_fanotify_init_exec(void) {
    return fanotify_init(FAN_CLASS_CONTENT | FAN_CLOEXEC | FAN_NONBLOCK | FAN_UNLIMITED_QUEUE,
                         O_RDONLY | O_CLOEXEC);
}

/// Adds (or removes) the exec-permission mark on the inode `file` is open on.
static inline int vx_fanotify_mark_exec(int group, int file, int add) {
    return fanotify_mark(group, add ? FAN_MARK_ADD : FAN_MARK_REMOVE, FAN_OPEN_EXEC_PERM, file, NULL);
}

/// One event of a buffer read from the group: its mask, file descriptor (FAN_NOFD for
/// none) and pid. Returns the offset of the next event, or -1 when none is left (or the
/// rest is malformed, or of another metadata version).
static inline long vx_fanotify_event(const void *buffer, long length, long offset,
                                     uint64_t *mask, int *fd, int *pid) {
    if (offset < 0 || length - offset < (long)FAN_EVENT_METADATA_LEN) return -1;
    const struct fanotify_event_metadata *m = (const void *)((const char *)buffer + offset);
    if (m->vers != FANOTIFY_METADATA_VERSION || m->event_len < FAN_EVENT_METADATA_LEN
        || (long)m->event_len > length - offset) return -1;
    *mask = m->mask;
    *fd = m->fd;
    *pid = m->pid;
    return offset + m->event_len;
}

/// Answers the permission event whose descriptor is `fd`.
static inline int vx_fanotify_respond(int group, int fd, int allow) {
    struct fanotify_response response = { .fd = fd, .response = allow ? FAN_ALLOW : FAN_DENY };
    return write(group, &response, sizeof response) == (ssize_t)sizeof response ? 0 : -1;
}

static inline uint64_t vx_fan_open_exec_perm(void) { return FAN_OPEN_EXEC_PERM; }
static inline uint64_t vx_fan_q_overflow(void) { return FAN_Q_OVERFLOW; }
static inline int vx_fan_nofd(void) { return FAN_NOFD; }
