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
