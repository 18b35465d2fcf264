#ifndef CMAXMINDDB_SHIM_H
#define CMAXMINDDB_SHIM_H

// Debian's libmaxminddb (libmaxminddb-dev), for the server's views by country and ASN.
// MMDB_get_value is variadic, which Swift cannot call, so the one lookup the server makes is written
// here whole: an address in, its country ISO code, ASN and network prefix length out, without
// allocating (libmaxminddb reads straight from the mapped file).
#include <maxminddb.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

/// An anonymous in-memory file (memfd_create(2), close-on-exec) to copy a database into before
/// libmaxminddb maps it: the mapping then never changes under the server, even when the operator
/// overwrites the file in place (a shrunk mapped file is SIGBUS on the next lookup).
static inline int cmaxminddb_memfd(void) { return (int)syscall(SYS_memfd_create, "httpdns-mmdb", 1u /* MFD_CLOEXEC */); }

/// What one lookup found. `found` is 0 when no record covers the address (then only `netmask`,
/// the depth at which the search tree ended, means anything).
typedef struct {
    int found;
    uint16_t netmask;
    /// `country.iso_code`, NUL-terminated; empty when the record has none (or not 2-3 letters).
    char country[4];
    /// `autonomous_system_number`; `has_asn` is 0 when the record has none.
    uint32_t asn;
    int has_asn;
} cmaxminddb_result;

/// Reads `country.iso_code` and `autonomous_system_number` of one data record into `out`'s
/// `country`, `asn` and `has_asn`. Returns an MMDB_* status (a record without them is a success).
static inline int cmaxminddb_entry_fields(MMDB_entry_s *entry, cmaxminddb_result *out) {
    MMDB_entry_data_s data;
    static const char *const country_path[] = {"country", "iso_code", NULL};
    int status = MMDB_aget_value(entry, &data, country_path);
    if (status == MMDB_SUCCESS && data.has_data && data.type == MMDB_DATA_TYPE_UTF8_STRING &&
        data.data_size >= 2 && data.data_size <= 3) {
        memcpy(out->country, data.utf8_string, data.data_size);
        out->country[data.data_size] = 0;
    } else if (status != MMDB_SUCCESS && status != MMDB_LOOKUP_PATH_DOES_NOT_MATCH_DATA_ERROR &&
               status != MMDB_INVALID_LOOKUP_PATH_ERROR) {
        return status;
    }
    static const char *const asn_path[] = {"autonomous_system_number", NULL};
    status = MMDB_aget_value(entry, &data, asn_path);
    if (status == MMDB_SUCCESS && data.has_data) {
        if (data.type == MMDB_DATA_TYPE_UINT32) {
            out->asn = data.uint32;
            out->has_asn = 1;
        } else if (data.type == MMDB_DATA_TYPE_UINT16) {
            out->asn = data.uint16;
            out->has_asn = 1;
        } else if (data.type == MMDB_DATA_TYPE_UINT64 && data.uint64 <= 0xffffffffu) {
            out->asn = (uint32_t)data.uint64;
            out->has_asn = 1;
        }
    } else if (status != MMDB_SUCCESS && status != MMDB_LOOKUP_PATH_DOES_NOT_MATCH_DATA_ERROR &&
               status != MMDB_INVALID_LOOKUP_PATH_ERROR) {
        return status;
    }
    return MMDB_SUCCESS;
}

/// Looks up the 4- or 16-byte `address` in `db`. Returns an MMDB_* status (MMDB_SUCCESS when the
/// lookup itself worked, whether or not a record was found).
static inline int cmaxminddb_lookup(const MMDB_s *db, const uint8_t *address, int is_v6, cmaxminddb_result *out) {
    memset(out, 0, sizeof(*out));
    struct sockaddr_in v4;
    struct sockaddr_in6 v6;
    const struct sockaddr *sa;
    if (is_v6) {
        memset(&v6, 0, sizeof(v6));
        v6.sin6_family = AF_INET6;
        memcpy(&v6.sin6_addr, address, 16);
        sa = (const struct sockaddr *)&v6;
    } else {
        memset(&v4, 0, sizeof(v4));
        v4.sin_family = AF_INET;
        memcpy(&v4.sin_addr, address, 4);
        sa = (const struct sockaddr *)&v4;
    }
    int error = MMDB_SUCCESS;
    MMDB_lookup_result_s result = MMDB_lookup_sockaddr(db, sa, &error);
    if (error != MMDB_SUCCESS) return error;
    out->netmask = result.netmask;
    if (!result.found_entry) return MMDB_SUCCESS;
    out->found = 1;
    return cmaxminddb_entry_fields(&result.entry, out);
}

/// Called by cmaxminddb_walk for each network with a data record: its first address (16 bytes, the
/// unused bytes 0; an IPv4 database's addresses in the first 4), its prefix length in the tree's own
/// bits, and the record. A non-zero return stops the walk with that status.
typedef int (*cmaxminddb_visit)(void *context, const uint8_t *network, int prefix_length, MMDB_entry_s *entry);

/// Walks the whole search tree of `db`, depth first, calling `visit` for every network that has a
/// data record. The subtree at ::ffff:0:0/96 of an IPv6 database (IPv4-mapped addresses, which the
/// server looks up as IPv4) is not entered. Every record is checked on the way: a node number out of
/// range, a record type libmaxminddb calls invalid, a tree deeper than the address or more node
/// visits than `max_visits` (a tree that loops) is MMDB_CORRUPT_SEARCH_TREE_ERROR.
static inline int cmaxminddb_walk(const MMDB_s *db, uint64_t max_visits, cmaxminddb_visit visit, void *context) {
    const int bits = db->metadata.ip_version == 4 ? 32 : 128;
    /* Depth first: each level leaves at most its right child waiting, so 2 per level bounds it. */
    struct pending { uint32_t node; int depth; uint8_t network[16]; } stack[2 * 128 + 2];
    int top = 0;
    memset(&stack[0], 0, sizeof(stack[0]));
    top = 1;
    uint64_t visits = 0;
    while (top > 0) {
        struct pending current = stack[--top];
        if (++visits > max_visits) return MMDB_CORRUPT_SEARCH_TREE_ERROR;
        MMDB_search_node_s node;
        int status = MMDB_read_node(db, current.node, &node);
        if (status != MMDB_SUCCESS) return status;
        for (int side = 1; side >= 0; side--) {
            struct pending child = current;
            child.depth = current.depth + 1;
            if (side) child.network[current.depth / 8] |= (uint8_t)(0x80u >> (current.depth % 8));
            uint8_t type = side ? node.right_record_type : node.left_record_type;
            switch (type) {
            case MMDB_RECORD_TYPE_EMPTY:
                break;
            case MMDB_RECORD_TYPE_DATA: {
                MMDB_entry_s entry = side ? node.right_record_entry : node.left_record_entry;
                int stop = visit(context, child.network, child.depth, &entry);
                if (stop != 0) return stop;
                break;
            }
            case MMDB_RECORD_TYPE_SEARCH_NODE: {
                uint64_t next = side ? node.right_record : node.left_record;
                if (child.depth >= bits || next >= db->metadata.node_count) return MMDB_CORRUPT_SEARCH_TREE_ERROR;
                if (bits == 128 && child.depth == 96) {
                    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
                    if (memcmp(child.network, mapped, 12) == 0) break;
                }
                if (top >= (int)(sizeof(stack) / sizeof(stack[0]))) return MMDB_CORRUPT_SEARCH_TREE_ERROR;
                child.node = (uint32_t)next;
                stack[top++] = child;
                break;
            }
            default:
                return MMDB_CORRUPT_SEARCH_TREE_ERROR;
            }
        }
    }
    return MMDB_SUCCESS;
}

#endif
