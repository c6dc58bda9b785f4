#pragma once
// The netlink headers Swift sees: libmnl (sockets, message building), libnftnl (nf_tables
// objects and batches) and the kernel's uapi. Function-like macros are not importable, so
// the few we need are re-exported as static inline functions.
#include <stdint.h>
#include <sys/socket.h>
// glibc first: linux/libc-compat.h then skips the uapi copies of in_addr & co., so the
// module agrees with Glibc about those structs.
#include <netinet/in.h>
#include <net/if.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/fib_rules.h>
#include <linux/if_link.h>
#include <linux/if_addr.h>
#include <linux/connector.h>
#include <linux/cn_proc.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/sock_diag.h>
#include <linux/inet_diag.h>
#include <linux/genetlink.h>
#include <linux/nl80211.h>
#include <libmnl/libmnl.h>
#include <libnftnl/table.h>
#include <libnftnl/chain.h>
#include <libnftnl/rule.h>
#include <libnftnl/expr.h>
#include <libnftnl/set.h>
#include <libnftnl/object.h>
#include <libnftnl/batch.h>
#include <libnftnl/common.h>
#include <libnftnl/udata.h>

static inline size_t vx_mnl_socket_buffer_size(void) { return MNL_SOCKET_BUFFER_SIZE; }
static inline size_t vx_nlmsg_hdrlen(void) { return NLMSG_HDRLEN; }

// --- the process connector (exec events) ---

/// The subscription message: nlmsghdr + cn_msg (proc connector) + PROC_CN_MCAST_LISTEN
/// (or _IGNORE). Writes it into `buffer` (at least 64 bytes) and returns its length.
static inline size_t vx_cn_proc_listen(void *buffer, uint32_t portid, int listen) {
    struct nlmsghdr *header = (struct nlmsghdr *)buffer;
    struct cn_msg *message = (struct cn_msg *)NLMSG_DATA(header);
    enum proc_cn_mcast_op *op = (enum proc_cn_mcast_op *)message->data;
    size_t length = NLMSG_LENGTH(sizeof(struct cn_msg) + sizeof(*op));
    __builtin_memset(buffer, 0, length);
    header->nlmsg_len = (uint32_t)length;
    header->nlmsg_type = NLMSG_DONE;
    header->nlmsg_pid = portid;
    message->id.idx = CN_IDX_PROC;
    message->id.val = CN_VAL_PROC;
    message->len = sizeof(*op);
    *op = listen ? PROC_CN_MCAST_LISTEN : PROC_CN_MCAST_IGNORE;
    return length;
}

/// If the netlink message is an exec event of the proc connector, its process (thread
/// group) id into `tgid` and 1; else 0.
static inline int vx_cn_proc_exec(const struct nlmsghdr *header, int32_t *tgid) {
    if (header->nlmsg_len < NLMSG_LENGTH(sizeof(struct cn_msg) + sizeof(struct proc_event))) return 0;
    const struct cn_msg *message = (const struct cn_msg *)NLMSG_DATA(header);
    if (message->id.idx != CN_IDX_PROC || message->id.val != CN_VAL_PROC) return 0;
    const struct proc_event *event = (const struct proc_event *)message->data;
    if (event->what != PROC_EVENT_EXEC) return 0;
    *tgid = event->event_data.exec.process_tgid;
    return 1;
}
