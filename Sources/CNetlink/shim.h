#ifndef CNETLINK_SHIM_H
#define CNETLINK_SHIM_H

// The kernel's rtnetlink ABI (linux/netlink.h, linux/rtnetlink.h) for the network-change watcher.
// Swift imports the constants and structs; the function-like NLMSG_* macros are not imported,
// so the two the watcher needs are wrapped here.
#ifdef __linux__
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/eventfd.h>

/// NLMSG_ALIGN: message lengths round up to this boundary in a datagram.
static inline unsigned int cnetlink_align(unsigned int length) { return NLMSG_ALIGN(length); }
/// NLMSG_HDRLEN: where a message's payload starts.
static inline unsigned int cnetlink_header_length(void) { return NLMSG_HDRLEN; }
#endif

#endif
