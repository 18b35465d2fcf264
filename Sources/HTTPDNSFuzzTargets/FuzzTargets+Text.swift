#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSTransport

/// Small text parsers at the boundary: the JSON reader, URL queries, IP literals, host patterns and
/// `Cache-Control`.
extension HTTPDNSFuzzTarget {
    static let json = HTTPDNSFuzzTarget("json", "the JSON reader stays within its depth and agrees with Foundation on what is JSON") {
        bytes throws(HTTPDNSFuzzFailure) in
        guard let value = try? HTTPDNSJSON.parse(bytes, source: "fuzz") else { return }
        try require(depth(value) <= HTTPDNSJSON.maxDepth + 1, "nesting deeper than \(HTTPDNSJSON.maxDepth)")
        // Written out again, the value reads back the same.
        let written = serialized(value, numbers: true)
        try require((try? HTTPDNSJSON.parse(written, source: "fuzz")) == value, "the value does not read back")
        // Foundation agrees it is JSON. Numbers are left out of the comparison: ours keeps them as
        // text (any length, any exponent, as RFC 8259 allows), Foundation refuses what a Double cannot hold.
        let reference = try? JSONSerialization.jsonObject(with: Data(serialized(value, numbers: false)), options: [.fragmentsAllowed])
        try require(reference != nil, "accepted a document Foundation rejects")
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// `value` as JSON text; numbers as `0` unless `numbers`.
    private static func serialized(_ value: HTTPDNSJSON, numbers: Bool) -> [UInt8] {
        var out: [UInt8] = []
        func string(_ text: String) {
            out.append(0x22)
            for byte in text.utf8 {
                switch byte {
                case 0x22, 0x5c: out += [0x5c, byte]
                case 0..<0x20: out += Array("\\u00".utf8) + [hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0x0f)]]
                default: out.append(byte)
                }
            }
            out.append(0x22)
        }
        func write(_ value: HTTPDNSJSON) {
            switch value {
            case .null: out += Array("null".utf8)
            case .bool(let flag): out += Array((flag ? "true" : "false").utf8)
            case .number(let text): out += numbers ? Array(text.utf8) : [0x30]
            case .string(let text): string(text)
            case .array(let items):
                out.append(0x5b)
                for (index, item) in items.enumerated() {
                    if index > 0 { out.append(0x2c) }
                    write(item)
                }
                out.append(0x5d)
            case .object(let object):
                out.append(0x7b)
                for (index, member) in object.members.enumerated() {
                    if index > 0 { out.append(0x2c) }
                    string(member.key)
                    out.append(0x3a)
                    write(member.value)
                }
                out.append(0x7d)
            }
        }
        write(value)
        return out
    }

    static let urlQuery = HTTPDNSFuzzTarget("url-query", "percent-encoding decodes back; configured base URLs stay clean") {
        bytes throws(HTTPDNSFuzzFailure) in
        var input = FuzzInput(bytes)
        let keep: Set<UInt8> = input.choice(2) == 0 ? [] : [UInt8(ascii: ","), UInt8(ascii: ":")]
        let text = input.text
        let encoded = HTTPDNSURLQuery.encode(text, keep: keep)
        let unreserved = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~%".utf8).union(keep)
        try require(encoded.utf8.allSatisfy(unreserved.contains), "a reserved byte left unencoded")
        try require(encoded.removingPercentEncoding == text, "percent-decoding does not give the value back")
        var query = HTTPDNSURLQuery()
        query.add("v", text, keep: keep)
        let url = query.appended(to: "https://svc.test/p?k=1#frag")
        try require(url == "https://svc.test/p?k=1&v=\(encoded)#frag", "query appended in the wrong place: \(url)")
        if let base = try? HTTPDNSURLQuery.checkedBase(text, source: "fuzz") {
            try require(!base.utf8.contains { $0 <= 0x20 || $0 == 0x7f }, "a base URL with spaces or controls")
            try require(!base.hasSuffix("/") || base.hasSuffix("://"), "a base URL ending in /")
            try require(text.hasPrefix(base), "the base is not a prefix of the configured URL")
        }
    }

    static let ipAddress = HTTPDNSFuzzTarget("ip-address", "IP literals agree with inet_pton; text round-trips; inet_ntop agrees") {
        bytes throws(HTTPDNSFuzzFailure) in
        var text = bytes[...]
        let parsed = HTTPDNSIPAddress(String(decoding: bytes, as: UTF8.self))
        let validUTF8 = String(validating: bytes, as: UTF8.self) != nil
        if text.count >= 2, text.first == UInt8(ascii: "["), text.last == UInt8(ascii: "]") {
            text = text.dropFirst().dropLast()
        }
        if validUTF8, !text.contains(0) {
            let bracketed = text.count != bytes.count
            let v6 = reference(AF_INET6, Array(text))
            let v4 = bracketed ? nil : reference(AF_INET, Array(text))
            try require(parsed?.bytes == (v6 ?? v4), "HTTPDNSIPAddress \(parsed?.description ?? "nil") but inet_pton \(String(describing: v6 ?? v4))")
        }
        if let parsed {
            try require(HTTPDNSIPAddress(parsed.description) == parsed, "description does not parse back")
            try require(HTTPDNSIPAddress(parsed.uriText) == parsed, "uriText does not parse back")
            // inet_ntop prints IPv4-compatible addresses (::a.b.c.d, deprecated) dotted; RFC 5952 does not.
            let compatible = parsed.family == .v6 && parsed.bytes[0..<12].allSatisfy { $0 == 0 }
            if !compatible { try require(parsed.description == printed(parsed), "description \(parsed.description) vs inet_ntop") }
        }
        for count in [4, 16] where bytes.count >= count {
            guard let raw = HTTPDNSIPAddress(bytes: Array(bytes.prefix(count))) else {
                throw HTTPDNSFuzzFailure(detail: "\(count) bytes are not an address")
            }
            try require(raw.bytes == Array(bytes.prefix(count)), "bytes do not round-trip")
            try require(HTTPDNSIPAddress(raw.description) == raw, "\(raw) does not parse back")
        }
    }

    static let hostPattern = HTTPDNSFuzzTarget("host-pattern", "host patterns protect exactly what they name, never literals") {
        bytes throws(HTTPDNSFuzzFailure) in
        // Lines are patterns, the last line is the host asked about.
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let patterns = Array(lines.dropLast())
        let host = lines.last ?? ""
        // Every pattern (exclusions `!…` included) for what holds of any policy, inclusions alone for
        // the exact reading of `name`, `*.suffix` and `*`.
        let inclusions = patterns.filter { !$0.hasPrefix("!") }
        let name = HTTPDNSHostPolicy.normalize(host)
        for policy in [HTTPDNSHostPolicy(patterns), HTTPDNSHostPolicy(inclusions)] {
            try require(policy.protects(host.uppercased()) == policy.protects(host.lowercased()), "case changes the answer")
            if HTTPDNSIPAddress.isLiteral(host) || HTTPDNSIPAddress.isLiteral(name) || name.isEmpty {
                try require(!policy.protects(host), "a literal or empty host is protected")
            }
        }
        guard !HTTPDNSIPAddress.isLiteral(name), !name.isEmpty else { return }
        let normalized = inclusions.map(HTTPDNSHostPolicy.normalize)
        let expected = normalized.contains("*") || normalized.contains(name) || normalized.contains { pattern in
            pattern.hasPrefix("*.") && name.hasSuffix(pattern.dropFirst()) && name.count > pattern.count - 1
        }
        try require(HTTPDNSHostPolicy(inclusions).protects(host) == expected, "protects(\(host)) is not \(expected)")
    }

    static let cacheControl = HTTPDNSFuzzTarget("cache-control", "Cache-Control max-age minus Age stays within 0...2^31") {
        bytes throws(HTTPDNSFuzzFailure) in
        // The first line is Cache-Control, the second (if any) Age.
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
        var headers = [HTTPTransportHeader(name: "Cache-Control", value: String(lines[0]))]
        if lines.count > 1 { headers.append(HTTPTransportHeader(name: "Age", value: String(lines[1]))) }
        let head = HTTPTransportResponseHead(statusCode: 200, headers: headers, connectedAddress: nil, httpVersion: "2")
        let response = HTTPTransportResponse(head: head, body: Data(), metrics: HTTPTransportMetrics())
        let lifetime = HTTPDNSProvider.freshnessLifetime(response)
        if let lifetime { try require((0...2_147_483_648).contains(lifetime), "lifetime \(lifetime)") }
        // The plain form has one answer.
        let value = lines[0]
        if lines.count == 1, value.hasPrefix("max-age="), let seconds = Int(value.dropFirst(8)), seconds >= 0,
           value.dropFirst(8).allSatisfy(\.isASCIIDigitForFuzz), value.count <= 18 {
            try require(lifetime == min(seconds, 2_147_483_648), "max-age=\(seconds) gave \(String(describing: lifetime))")
        }
    }

    private static func depth(_ value: HTTPDNSJSON) -> Int {
        switch value {
        case .array(let items): 1 + (items.map(depth).max() ?? 0)
        case .object(let object): 1 + (object.members.map { depth($0.value) }.max() ?? 0)
        default: 0
        }
    }

    /// inet_pton's reading of `text` (a C string without NUL), or nil.
    private static func reference(_ family: Int32, _ text: [UInt8]) -> [UInt8]? {
        var storage = [UInt8](repeating: 0, count: 16)
        let ok = (text + [0]).withUnsafeBufferPointer { chars in
            chars.withMemoryRebound(to: CChar.self) { inet_pton(family, $0.baseAddress!, &storage) == 1 }
        }
        guard ok else { return nil }
        return Array(storage.prefix(family == AF_INET ? 4 : 16))
    }

    /// inet_ntop's text for `address`.
    private static func printed(_ address: HTTPDNSIPAddress) -> String {
        var bytes = address.bytes
        var out = [CChar](repeating: 0, count: 64)
        let family = address.family == .v4 ? AF_INET : AF_INET6
        _ = inet_ntop(family, &bytes, &out, socklen_t(out.count))
        return String(decoding: out.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

extension Character {
    fileprivate var isASCIIDigitForFuzz: Bool { isASCII && isNumber }
}
