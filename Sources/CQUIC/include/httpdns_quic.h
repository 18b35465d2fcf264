// A narrow C face over Debian's ngtcp2 (QUIC, RFC 9000) with its GnuTLS crypto back end, for DNS
// over QUIC (RFC 9250): Swift never imports ngtcp2's or GnuTLS's headers. The server half
// (`httpdns serve --listen quic://`) and the client half (`httpdns stub --upstream doq=`, the
// bench's load client) live in their own files with their own headers.
#ifndef HTTPDNS_QUIC_H
#define HTTPDNS_QUIC_H

#include "httpdns_quic_client.h"

/// ngtcp2's version string as the library reports it at run time (for `--version` and logs).
const char *httpdns_quic_library_version(void);

#include "httpdns_quic_server.h"

#endif
