#define _GNU_SOURCE
#include "CSockets.h"

#include <linux/filter.h>

/* Refuses new connections at a listener without closing it: a classic BPF program that drops a
 * SYN without ACK (the client's SYN goes unanswered and, retried, later finds the port closed) and
 * lets every other segment through, so that a handshake the kernel already answered completes and
 * its connection is accepted. The program sees the TCP header at offset 0 (tcp_v4_rcv and
 * tcp_v6_rcv run the socket's filter with the IP header pulled); byte 13 holds the flags.
 * Dropping every packet instead lost a request under load: a reconnecting client whose SYN-ACK
 * came before the filter had its ACK and request dropped, and was reset once the listener closed. */
int httpdns_refuse_new_connections(int fd)
{
    struct sock_filter program_code[] = {
        BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 13),
        BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0x12), /* SYN | ACK */
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x02, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, 0),
        BPF_STMT(BPF_RET | BPF_K, 0xffffffff),
    };
    struct sock_fprog program = {.len = sizeof program_code / sizeof program_code[0], .filter = program_code};
    return setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &program, sizeof program);
}
