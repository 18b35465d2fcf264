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

    MMDB_entry_data_s data;
    static const char *const country_path[] = {"country", "iso_code", NULL};
    int status = MMDB_aget_value(&result.entry, &data, country_path);
    if (status == MMDB_SUCCESS && data.has_data && data.type == MMDB_DATA_TYPE_UTF8_STRING &&
        data.data_size >= 2 && data.data_size <= 3) {
        memcpy(out->country, data.utf8_string, data.data_size);
        out->country[data.data_size] = 0;
    } else if (status != MMDB_SUCCESS && status != MMDB_LOOKUP_PATH_DOES_NOT_MATCH_DATA_ERROR &&
               status != MMDB_INVALID_LOOKUP_PATH_ERROR) {
        return status;
    }
    static const char *const asn_path[] = {"autonomous_system_number", NULL};
    status = MMDB_aget_value(&result.entry, &data, asn_path);
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

#endif
