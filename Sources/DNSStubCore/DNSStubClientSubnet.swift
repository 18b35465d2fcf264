import HTTPDNSCore
/// The EDNS Client Subnet option of a query (RFC 7871 §6), checked.
///
/// The stub never forwards it by itself (issue 23: no ECS upstream unless asked); the I/O shell
/// decides. A malformed option makes the whole query FORMERR (RFC 7871 §6).
package struct DNSStubClientSubnet: Sendable, Hashable {
    /// FAMILY: 1 IPv4, 2 IPv6 (the IANA address family numbers).
    package var family: UInt16
    /// SOURCE PREFIX-LENGTH; 0 is the client asking that no address be used (RFC 7871 §7.1.2).
    package var sourcePrefixLength: Int
    /// ADDRESS: exactly the octets the prefix covers, as sent.
    package var address: [UInt8]

    /// Reads the option's data (FAMILY, SOURCE, SCOPE, ADDRESS).
    ///
    /// Nil for an unknown family, a prefix past the family's bits, a SCOPE PREFIX-LENGTH other than
    /// 0 (queries must send 0), too few or too many ADDRESS octets, or address bits set past the
    /// source prefix (RFC 7871 §6: all FORMERR).
    package init?(optionData data: ArraySlice<UInt8>) {
        guard data.count >= 4 else { return nil }
        let start = data.startIndex
        let family = UInt16(data[start]) << 8 | UInt16(data[start + 1])
        let source = Int(data[start + 2])
        let address = Array(data[(start + 4)...])
        let bits: Int
        switch family {
        case 1: bits = 32
        case 2: bits = 128
        default: return nil
        }
        guard source <= bits, data[start + 3] == 0, address.count == (source + 7) / 8 else { return nil }
        if source % 8 != 0, let last = address.last, last & (0xFF >> UInt8(source % 8)) != 0 { return nil }
        self.family = family
        self.sourcePrefixLength = source
        self.address = address
    }

    /// The option as it goes into OPT RDATA, SCOPE PREFIX-LENGTH 0 (RFC 7871 §6).
    package var option: [UInt8] {
        let length = 4 + address.count
        return [0, UInt8(HTTPDNSClientSubnet.optionCode), UInt8(length >> 8), UInt8(length & 0xFF),
                UInt8(family >> 8), UInt8(family & 0xFF), UInt8(sourcePrefixLength), 0] + address
    }
}
