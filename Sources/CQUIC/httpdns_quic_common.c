#include "httpdns_quic.h"

#include <ngtcp2/ngtcp2.h>

const char *httpdns_quic_library_version(void) {
    const ngtcp2_info *info = ngtcp2_version(0);
    return info != NULL ? info->version_str : "unknown";
}
