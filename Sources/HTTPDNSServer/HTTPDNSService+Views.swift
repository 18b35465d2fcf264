import HTTPDNSCore
import HTTPServing

/// An EDNS Client Subnet option read from a query (RFC 7871 §6): what the client says about its
/// network, checked as §6 asks a server to check it.
struct HTTPDNSQuerySubnet: Sendable, Hashable {
    /// FAMILY: 1 IPv4, 2 IPv6.
    var family: UInt16
    /// SOURCE PREFIX-LENGTH.
    var sourcePrefixLength: Int
    /// ADDRESS, the bytes the prefix covers, as sent.
    var addressBytes: ArraySlice<UInt8>

    /// What an option's data may be.
    enum Reading: Sendable, Hashable {
        case absent
        /// A well-formed option.
        case subnet(HTTPDNSQuerySubnet)
        /// RFC 7871 §6: too few or too many ADDRESS octets, bits set past the source prefix, a
        /// SCOPE PREFIX-LENGTH other than 0 in a query, a prefix past the family's bits, or an
        /// unknown family. The server answers FORMERR.
        case malformed
    }

    /// Reads the first Client Subnet option of EDNS `options`.
    static func read(_ options: [UInt8]) -> Reading {
        switch HTTPDNSClientSubnet.findOption(in: options) {
        case .absent: return .absent
        case .malformed: return .malformed
        case .found(let data): return parse(data)
        }
    }

    /// Checks one option's data (FAMILY, SOURCE, SCOPE, ADDRESS).
    static func parse(_ data: ArraySlice<UInt8>) -> Reading {
        guard data.count >= 4 else { return .malformed }
        let start = data.startIndex
        let family = UInt16(data[start]) << 8 | UInt16(data[start + 1])
        let source = Int(data[start + 2])
        let scope = data[start + 3]
        let address = data[(start + 4)...]
        let bits: Int
        switch family {
        case 1: bits = 32
        case 2: bits = 128
        default: return .malformed
        }
        guard source <= bits, scope == 0, address.count == (source + 7) / 8 else { return .malformed }
        if source % 8 != 0, let last = address.last, last & (0xff >> UInt8(source % 8)) != 0 { return .malformed }
        return .subnet(HTTPDNSQuerySubnet(family: family, sourcePrefixLength: source, addressBytes: address))
    }

    /// The client the option names (the network's first address); nil for a source prefix of 0, the
    /// client asking that no address information be used (RFC 7871 §7.1.2).
    var client: HTTPDNSIPAddress? {
        guard sourcePrefixLength > 0 else { return nil }
        var bytes = [UInt8](repeating: 0, count: family == 1 ? 4 : 16)
        for (index, byte) in addressBytes.enumerated() { bytes[index] = byte }
        return HTTPDNSIPAddress(bytes: bytes)
    }

    /// The option for the response (RFC 7871 §7.2.1): FAMILY, SOURCE PREFIX-LENGTH and ADDRESS as
    /// the query sent them, and `scope` as SCOPE PREFIX-LENGTH (capped at the family's bits).
    func answerOption(scope: Int) -> [UInt8] {
        let length = 4 + addressBytes.count
        let cappedScope = UInt8(min(max(0, scope), family == 1 ? 32 : 128))
        return [0, UInt8(HTTPDNSClientSubnet.optionCode), UInt8(length >> 8), UInt8(length & 0xff),
                UInt8(family >> 8), UInt8(family & 0xff), UInt8(sourcePrefixLength), cappedScope] + addressBytes
    }
}

extension HTTPDNSService {
    /// Why a request's client could not be read.
    enum ViewClientFault: Error {
        /// An `ip=` parameter that is not one IP address.
        case badParameter
    }

    /// The address a request is answered for, in the order the views consult it:
    ///
    /// 1. `subnet`, the EDNS Client Subnet option of a DNS wire query (RFC 7871); a source prefix of
    ///    0 names no address, and nothing else is consulted (the default view: RFC 7871 §7.1.2);
    /// 2. `ipParameter`, the `ip=` query parameter of DNSPod's `/d` and Alibaba's `/{account}/…`
    ///    (their SDKs' way to resolve for another client; DNSPod enterprise mode decrypts it first);
    /// 3. ``clientAddress(of:)``: the PROXY protocol source or `X-Forwarded-For` from
    ///    ``Configuration/trustedProxies`` peers, else the peer (an untrusted header is ignored).
    ///
    /// An IPv4-mapped IPv6 address is matched as the IPv4 address it maps (``HTTPDNSViewMatcher``).
    ///
    /// - Throws: ``ViewClientFault/badParameter`` for an `ip=` that is not one IP address.
    func viewClient(
        of request: HTTPServer.Request, subnet: HTTPDNSQuerySubnet? = nil, ipParameter: String? = nil
    ) throws(ViewClientFault) -> HTTPDNSIPAddress? {
        // A source prefix of 0 asks that no address be used (RFC 7871 §7.1.2): the default view.
        if let subnet { return subnet.client }
        if let text = ipParameter {
            guard text.utf8.count <= 64, !text.hasPrefix("["), let address = HTTPDNSIPAddress(text) else { throw .badParameter }
            return address
        }
        return clientAddress(of: request)
    }

    /// Picks the view of `client` for this request's answers (``HTTPDNSServiceLookups/view``).
    func selectView(_ client: HTTPDNSIPAddress?, _ lookups: HTTPDNSServiceLookups) {
        lookups.view = lookups.views.match(client)
        lookups.viewSelected = true
    }
}
