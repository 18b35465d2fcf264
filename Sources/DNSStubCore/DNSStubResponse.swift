import DNSWire

/// What the stub answers a query with, before it is shaped for one client by
/// ``encode(for:maxUDPPayloadSize:)``: an RCODE and records, from an upstream, the engine or the
/// cache.
///
/// The header (ID, RD, CD, RA), the question and the OPT record are not here: they come from the
/// request, so that a cached answer serves any client.
package struct DNSStubResponse: Sendable, Hashable {
    /// The RCODE; an extended one (BADVERS) needs the client's OPT record to travel.
    package var rcode: DNSResponseCode
    /// The answer section in the upstream's order: a CNAME chain stays whole and in order.
    package var answers: [DNSRecord]
    package var authorities: [DNSRecord]
    /// The additional section. OPT and TSIG records, which belong to one hop only, are left out of
    /// every section.
    package var additionals: [DNSRecord]
    /// The upstream's AD bit. Sent on only to clients that set DO or AD (RFC 6840 §5.8); the stub,
    /// which does not validate, never sets AD itself.
    package var authenticData: Bool
    /// The upstream's answer was truncated: its records are incomplete, so none is sent and the
    /// client is told TC to ask again over TCP (RFC 2181 §9).
    package var isTruncated: Bool
    /// Sent as EDNS option 15 when the client speaks EDNS (RFC 8914).
    package var extendedError: DNSExtendedError?

    package init(
        rcode: DNSResponseCode = .noError, answers: [DNSRecord] = [], authorities: [DNSRecord] = [],
        additionals: [DNSRecord] = [], authenticData: Bool = false, isTruncated: Bool = false,
        extendedError: DNSExtendedError? = nil
    ) {
        self.rcode = rcode
        self.answers = answers.filter { $0.type != .OPT }
        self.authorities = authorities.filter { $0.type != .OPT }
        self.additionals = additionals.filter { $0.type != .OPT && $0.type != .TSIG }
        self.authenticData = authenticData
        self.isTruncated = isTruncated
        self.extendedError = extendedError
    }

    /// An upstream's answer to the query the stub forwarded.
    ///
    /// NOERROR, NXDOMAIN, SERVFAIL and REFUSED pass through; any other RCODE (FORMERR, NOTIMP, an
    /// extended one such as BADVERS or BADCOOKIE) is about the stub's own query to that upstream,
    /// so the client gets SERVFAIL with EDE 23 Network Error naming it. The upstream's first
    /// Extended DNS Error travels on; OPT and TSIG records stay behind.
    package init(upstream: DNSMessage) {
        let options = upstream.edns
        let extended = UInt16(options?.extendedRCode ?? 0) << 4 | UInt16(upstream.rcode.rawValue)
        self.init(
            rcode: upstream.rcode, answers: upstream.answers, authorities: upstream.authorities,
            additionals: upstream.additionals,
            authenticData: upstream.authenticData, isTruncated: upstream.isTruncated,
            extendedError: options.flatMap { DNSExtendedError.first(in: $0.options) }
        )
        let passed: [DNSResponseCode] = [.noError, .nameError, .serverFailure, .refused]
        if extended > 0x0F || !passed.contains(upstream.rcode) {
            self = .serverFailure(.networkError, "upstream answered RCODE \(extended)")
        }
    }

    /// SERVFAIL with an Extended DNS Error saying why: a query nobody could answer is never a
    /// silent NXDOMAIN (issue 23).
    ///
    /// - Parameters:
    ///   - infoCode: for example 22 No Reachable Authority (no upstream answered in time), 23
    ///     Network Error (an upstream failed), 0 Other.
    ///   - text: EXTRA-TEXT, for people.
    package static func serverFailure(_ infoCode: DNSExtendedError.InfoCode, _ text: String = "") -> DNSStubResponse {
        DNSStubResponse(rcode: .serverFailure, extendedError: DNSExtendedError(infoCode, text))
    }

    /// REFUSED with EDE 18 Prohibited (RFC 8914 §4.19), for a client not allowed to ask.
    package static func refused(_ text: String = "") -> DNSStubResponse {
        DNSStubResponse(rcode: .refused, extendedError: DNSExtendedError(.prohibited, text))
    }
}
