import DNSWire

/// An Extended DNS Error (RFC 8914): an INFO-CODE and EXTRA-TEXT that say why an answer failed or
/// is stale, carried as EDNS option 15 in the response's OPT record.
package struct DNSExtendedError: Sendable, Hashable, CustomStringConvertible {
    /// The EDNS option code of an Extended DNS Error (RFC 8914 §2).
    package static let optionCode: UInt16 = 15
    /// Longest EXTRA-TEXT written, in UTF-8 bytes: the OPT record must leave room for the question in
    /// a 512-byte answer, even one that is truncated (512 − header 12 − the longest question 259 −
    /// OPT 11 − the option's own 6 bytes leaves 224).
    package static let maxExtraTextBytes = 200

    /// An INFO-CODE (RFC 8914 §4; IANA "Extended DNS Error Codes").
    package struct InfoCode: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        package var rawValue: UInt16
        package init(rawValue: UInt16) { self.rawValue = rawValue }
        package init(_ rawValue: UInt16) { self.rawValue = rawValue }

        /// 0 Other Error (§4.1): nothing below fits; EXTRA-TEXT says what.
        package static let other = InfoCode(0)
        /// 3 Stale Answer (§4.4): served from an expired cache entry (RFC 8767).
        package static let staleAnswer = InfoCode(3)
        /// 18 Prohibited (§4.19): the client is not allowed to ask.
        package static let prohibited = InfoCode(18)
        /// 19 Stale NXDOMAIN Answer (§4.20): an expired NXDOMAIN served stale.
        package static let staleNXDOMAIN = InfoCode(19)
        /// 20 Not Authoritative (§4.21).
        package static let notAuthoritative = InfoCode(20)
        /// 21 Not Supported (§4.22): the operation or query type is not supported.
        package static let notSupported = InfoCode(21)
        /// 22 No Reachable Authority (§4.23): no upstream answered.
        package static let noReachableAuthority = InfoCode(22)
        /// 23 Network Error (§4.24): an upstream could not be reached or answered garbage.
        package static let networkError = InfoCode(23)

        package var description: String { "EDE \(rawValue)" }
    }

    package var infoCode: InfoCode
    /// Why, for people (RFC 8914 §2: UTF-8, not NUL-terminated); cut to ``maxExtraTextBytes``.
    package var extraText: String

    package init(_ infoCode: InfoCode, _ extraText: String = "") {
        self.infoCode = infoCode
        self.extraText = extraText
    }

    /// The option as it goes into OPT RDATA: OPTION-CODE 15, OPTION-LENGTH, INFO-CODE, EXTRA-TEXT
    /// (RFC 8914 §2), the text fitted to at most ``maxExtraTextBytes`` (``fitted(_:maxBytes:)``).
    package var option: [UInt8] {
        let text = Self.fitted(extraText, maxBytes: Self.maxExtraTextBytes)
        let length = 2 + text.count
        return [0, UInt8(Self.optionCode), UInt8(length >> 8), UInt8(length & 0xFF),
                UInt8(infoCode.rawValue >> 8), UInt8(infoCode.rawValue & 0xFF)] + text
    }

    /// `text` in at most `maxBytes` UTF-8 bytes, cut at character boundaries. A text of several
    /// reasons (`"NAME: reason; NAME: reason"`, one per upstream tried) keeps every reason: each
    /// gets an equal share, and a reason over its share loses the end of its NAME (a URL, say,
    /// marked "…"), not what went wrong, so the last upstream's reason is never the one cut off.
    package static func fitted(_ text: String, maxBytes: Int) -> [UInt8] {
        let whole = Array(text.utf8)
        guard whole.count > maxBytes else { return whole }
        let parts = text.components(separatedBy: "; ")
        let share = (maxBytes - 2 * (parts.count - 1)) / max(1, parts.count)
        guard parts.count > 1, share >= 8 else { return prefix(text, maxBytes) }
        var pieces: [[UInt8]] = []
        for part in parts {
            guard part.utf8.count > share else {
                pieces.append(Array(part.utf8))
                continue
            }
            guard let colon = part.range(of: ": ", options: .backwards) else {
                pieces.append(prefix(part, share))
                continue
            }
            let reason = Array(part[colon.lowerBound...].utf8)
            let ellipsis = Array("…".utf8)
            let room = share - reason.count - ellipsis.count
            if room >= 4 {
                pieces.append(prefix(String(part[..<colon.lowerBound]), room) + ellipsis + reason)
            } else {
                pieces.append(prefix(part, share))
            }
        }
        let joined = Array(pieces.joined(separator: Array("; ".utf8)))
        return joined.count <= maxBytes ? joined : prefix(String(decoding: joined, as: UTF8.self), maxBytes)
    }

    /// The longest prefix of `text` within `maxBytes` UTF-8 bytes that ends at a character boundary.
    private static func prefix(_ text: String, _ maxBytes: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        for scalar in text.unicodeScalars {
            let encoded = Array(String(scalar).utf8)
            if bytes.count + encoded.count > maxBytes { break }
            bytes += encoded
        }
        return bytes
    }

    /// The first Extended DNS Error in EDNS `options` (code, length, data triples); nil when there is
    /// none or the list is malformed before one.
    package static func first(in options: [UInt8]) -> DNSExtendedError? {
        var index = 0
        while index + 4 <= options.count {
            let code = UInt16(options[index]) << 8 | UInt16(options[index + 1])
            let length = Int(options[index + 2]) << 8 | Int(options[index + 3])
            let data = index + 4
            guard data + length <= options.count else { return nil }
            if code == optionCode {
                guard length >= 2 else { return nil }
                let info = UInt16(options[data]) << 8 | UInt16(options[data + 1])
                return DNSExtendedError(InfoCode(info), String(decoding: options[(data + 2)..<(data + length)], as: UTF8.self))
            }
            index = data + length
        }
        return nil
    }

    /// For example `EDE 22: no upstream answered`.
    package var description: String { extraText.isEmpty ? "\(infoCode)" : "\(infoCode): \(extraText)" }
}

extension DNSResponseCode {
    /// BADVERS (16, RFC 6891 §6.1.3): an extended RCODE, upper 8 bits in the OPT record (value 1)
    /// and the header's 4 bits 0.
    package static let badVersion = DNSResponseCode(16)
}
