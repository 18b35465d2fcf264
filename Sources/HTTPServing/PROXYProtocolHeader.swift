import HTTPDNSCore

/// The PROXY protocol header a load balancer sends before the client's bytes (HAProxy's
/// proxy-protocol.txt, versions 1 and 2), read as a pure value.
///
/// The server reads it only on connections from ``HTTPDNSTrustedProxies`` (anyone else could claim
/// any address): it feeds the first bytes to ``parse(_:)`` until the answer is not `.needMore`,
/// skips `consumed` bytes, and takes the source as the client's address.
///
/// - Version 1 (§2.1): `PROXY TCP4|TCP6 <src> <dst> <srcport> <dstport>\r\n`, at most 107 bytes;
///   addresses in canonical text (IPv4 without leading zeros), ports 0–65535 without leading zeros.
///   `PROXY UNKNOWN …\r\n` is `.local`: use the connection's own addresses.
/// - Version 2 (§2.2): the 12-byte signature, version 2, command LOCAL (`.local`) or PROXY, family
///   TCP/UDP over IPv4 or IPv6 (UNSPEC and UNIX are `.local`), and a length covering the addresses
///   and any TLVs (all consumed, none interpreted).
package enum PROXYProtocolHeader {
    /// What the first bytes of a connection say.
    package enum ParseResult: Sendable, Hashable {
        /// A prefix of a header: read more (at most 107 bytes for v1, 16 + 65,535 for v2).
        case needMore
        /// Not a PROXY header, or a broken one: close the connection. `reason` is for the log.
        case invalid(String)
        /// The original client: its address and port; the header is `consumed` bytes long.
        case header(source: HTTPDNSIPAddress, port: UInt16, consumed: Int)
        /// A header without a client (health checks, `UNKNOWN`, LOCAL, UNSPEC or UNIX family): use the
        /// connection's own peer address; the header is `consumed` bytes long.
        case local(consumed: Int)
    }

    /// Longest version 1 header, CRLF included (§2.1).
    package static let maxV1Length = 107
    /// The version 2 signature (§2.2).
    package static let v2Signature: [UInt8] = [0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]
    static let v1Signature: [UInt8] = Array("PROXY ".utf8)

    /// Reads the header at the start of `bytes` (which may hold the client's data after it).
    package static func parse(_ bytes: UnsafeRawBufferPointer) -> ParseResult {
        let input = bytes.bindMemory(to: UInt8.self)
        if startsWith(input, v2Signature) { return parseV2(input) }
        if startsWith(input, v1Signature) { return parseV1(input) }
        return .invalid("no PROXY protocol header")
    }

    /// Convenience for byte arrays (tests, callers holding an array).
    package static func parse(_ bytes: [UInt8]) -> ParseResult {
        bytes.withUnsafeBytes { parse($0) }
    }

    /// Whether `input` starts with `signature`, or is a (possibly empty) prefix of it: then `.needMore`
    /// comes from the version parser, which sees the length below the minimum.
    private static func startsWith(_ input: UnsafeBufferPointer<UInt8>, _ signature: [UInt8]) -> Bool {
        let count = min(input.count, signature.count)
        for index in 0..<count where input[index] != signature[index] { return false }
        return true
    }

    // MARK: - Version 1

    private static func parseV1(_ input: UnsafeBufferPointer<UInt8>) -> ParseResult {
        // The end of the line: CR LF within the first 107 bytes, so the CR at index 105 at the latest.
        var end: Int?
        for index in 0..<min(input.count, maxV1Length - 1) where input[index] == 0x0d {
            guard index + 1 < input.count else { return .needMore }
            guard input[index + 1] == 0x0a else { return .invalid("PROXY v1: CR without LF") }
            end = index
            break
        }
        guard let end else {
            return input.count < maxV1Length - 1 ? .needMore : .invalid("PROXY v1: no CRLF within \(maxV1Length) bytes")
        }
        let consumed = end + 2
        let line = Array(input[v1Signature.count..<end])
        let fields = line.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        guard let family = fields.first.map({ String(decoding: $0, as: UTF8.self) }) else {
            return .invalid("PROXY v1: no protocol")
        }
        if family == "UNKNOWN" { return .local(consumed: consumed) }  // §2.1: the rest is ignored
        guard family == "TCP4" || family == "TCP6" else { return .invalid("PROXY v1: unknown protocol") }
        guard fields.count == 5 else { return .invalid("PROXY v1: expected 4 fields after \(family)") }
        let expected: HTTPDNSIPAddress.Family = family == "TCP4" ? .v4 : .v6
        guard let source = v1Address(fields[1], family: expected), v1Address(fields[2], family: expected) != nil else {
            return .invalid("PROXY v1: bad \(family) address")
        }
        guard let port = v1Port(fields[3]), v1Port(fields[4]) != nil else { return .invalid("PROXY v1: bad port") }
        return .header(source: source, port: port, consumed: consumed)
    }

    private static func v1Address(_ text: ArraySlice<UInt8>, family: HTTPDNSIPAddress.Family) -> HTTPDNSIPAddress? {
        // IPv6 text only: no brackets, no zone index (HTTPDNSIPAddress accepts brackets; the spec does not).
        guard !text.isEmpty, text.count <= 45, text.allSatisfy({ isHexDigit($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: ":") })
        else {
            return nil
        }
        guard let address = HTTPDNSIPAddress(String(decoding: text, as: UTF8.self)), address.family == family else { return nil }
        return address
    }

    private static func v1Port(_ text: ArraySlice<UInt8>) -> UInt16? {
        guard (1...5).contains(text.count), text.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              text.count == 1 || text.first != UInt8(ascii: "0")
        else {
            return nil
        }
        let value = text.reduce(0) { $0 * 10 + Int($1 - 0x30) }
        return value <= 65_535 ? UInt16(value) : nil
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66)
    }

    // MARK: - Version 2

    private static func parseV2(_ input: UnsafeBufferPointer<UInt8>) -> ParseResult {
        guard input.count >= 16 else { return .needMore }
        let versionCommand = input[12]
        guard versionCommand >> 4 == 2 else { return .invalid("PROXY v2: version \(versionCommand >> 4)") }
        let command = versionCommand & 0x0f
        guard command <= 1 else { return .invalid("PROXY v2: unknown command \(command)") }
        let family = input[13]
        let length = Int(input[14]) << 8 | Int(input[15])
        let consumed = 16 + length
        // Check what can be checked before waiting for the whole block.
        let needed: Int
        switch family {
        case 0x00: needed = 0  // UNSPEC
        case 0x11, 0x12: needed = 12  // TCP/UDP over IPv4: 2 × 4 address bytes, 2 × 2 port bytes
        case 0x21, 0x22: needed = 36  // over IPv6: 2 × 16 + 2 × 2
        case 0x31, 0x32: needed = 216  // UNIX: 2 × 108
        default:
            // §2.2: LOCAL ignores the family; PROXY with one we do not know is refused.
            guard command == 0 else { return .invalid("PROXY v2: unknown address family 0x\(String(family, radix: 16))") }
            needed = 0
        }
        guard command == 0 || length >= needed else { return .invalid("PROXY v2: address block of \(length) bytes, need \(needed)") }
        guard input.count >= consumed else { return .needMore }
        // LOCAL (a balancer's own health check), UNSPEC and UNIX: the connection's own addresses.
        guard command == 1, family >> 4 == 1 || family >> 4 == 2 else { return .local(consumed: consumed) }
        let addressLength = family >> 4 == 1 ? 4 : 16
        guard let source = HTTPDNSIPAddress(bytes: Array(input[16..<16 + addressLength])) else {
            return .invalid("PROXY v2: bad address")
        }
        let portOffset = 16 + 2 * addressLength
        let port = UInt16(input[portOffset]) << 8 | UInt16(input[portOffset + 1])
        return .header(source: source, port: port, consumed: consumed)
    }
}
