import Foundation
import HTTPDNSCore
import HTTPDNSServer
import HTTPServing

/// What the server reads from its peers before any HTTP: the PROXY protocol header of a load
/// balancer, and `X-Forwarded-For` with the trusted-proxy blocks it is checked against.
extension HTTPDNSFuzzTarget {
    static let proxyProtocol = HTTPDNSFuzzTarget(
        "proxy-protocol", "a PROXY header is read the same whole, followed by client bytes, and every prefix asks for more"
    ) { bytes throws(HTTPDNSFuzzFailure) in
        let result = PROXYProtocolHeader.parse(bytes)
        let consumed: Int
        switch result {
        case .header(_, _, let count), .local(let count): consumed = count
        case .needMore:
            try require(bytes.count < 16 + 65_535, "needs more after \(bytes.count) bytes")
            return
        case .invalid: return
        }
        try require(consumed >= 1 && consumed <= bytes.count, "consumed \(consumed) of \(bytes.count)")
        let header = Array(bytes.prefix(consumed))
        if header.starts(with: Array("PROXY ".utf8)) {
            try require(consumed <= PROXYProtocolHeader.maxV1Length, "a v1 header of \(consumed) bytes")
        }
        try require(PROXYProtocolHeader.parse(header) == result, "the header alone reads differently")
        try require(PROXYProtocolHeader.parse(header + Array("GET / HTTP/1.1\r\n".utf8)) == result, "client bytes change the header")
        // Every proper prefix is a header still arriving (checked at up to 64 cut points).
        let step = max(1, consumed / 64)
        for length in stride(from: 0, to: consumed, by: step) {
            try require(PROXYProtocolHeader.parse(Array(header.prefix(length))) == .needMore, "the first \(length) bytes are not .needMore")
        }
    }

    static let forwardedFor = HTTPDNSFuzzTarget(
        "forwarded-for", "X-Forwarded-For yields the peer or an address of the header, never past an untrusted hop"
    ) { bytes throws(HTTPDNSFuzzFailure) in
        // Line 1: trusted blocks, comma-separated; line 2: the peer; the rest: header lines.
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard lines.count >= 2, let peer = HTTPDNSIPAddress(lines[1]) else { return }
        var blocks: [HTTPDNSTrustedProxies.Block] = []
        for text in lines[0].split(separator: ",").map(String.init) {
            guard let block = try? HTTPDNSTrustedProxies.Block(text) else { continue }
            // A block prints as text that parses back to itself, and holds its own network address.
            guard let again = try? HTTPDNSTrustedProxies.Block(block.description) else {
                throw HTTPDNSFuzzFailure(detail: "block \(block) does not parse back")
            }
            try require(again == block, "block \(block) reads back as \(again)")
            if let network = HTTPDNSIPAddress(String(block.description.split(separator: "/")[0])) {
                try require(block.contains(network), "\(block) does not hold its network address")
            }
            blocks.append(block)
        }
        guard let trusted = try? HTTPDNSTrustedProxies(blocks.map(\.description)) else {
            throw HTTPDNSFuzzFailure(detail: "valid blocks refused together")
        }
        let values = Array(lines.dropFirst(2))
        let client = HTTPDNSForwardedFor.client(peer: peer, values: values, trusted: trusted)
        if !trusted.contains(peer) {
            try require(client == peer, "an untrusted peer's header was believed")
            return
        }
        if client != peer {
            // Some entry of the header names the client (read leniently: bare, `[v6]:port`, `v4:port`).
            let entries = values.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }
            try require(entries.contains { entryAddresses($0).contains(client) }, "client \(client) appears nowhere in the header")
        }
    }

    /// The addresses an `X-Forwarded-For` entry could be read as.
    private static func entryAddresses(_ raw: Substring) -> [HTTPDNSIPAddress] {
        let text = String(raw.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
        var found: [HTTPDNSIPAddress] = []
        if let bare = HTTPDNSIPAddress(text) { found.append(bare) }
        if text.hasPrefix("["), let close = text.firstIndex(of: "]"),
           let inside = HTTPDNSIPAddress(String(text[text.index(after: text.startIndex)..<close])) {
            found.append(inside)
        }
        if let colon = text.lastIndex(of: ":"), let before = HTTPDNSIPAddress(String(text[..<colon])) { found.append(before) }
        return found
    }
}

/// The server's own query-string reader (``HTTPServerQuery``), which every service endpoint reads
/// its parameters through.
extension HTTPDNSFuzzTarget {
    static let serverQuery = HTTPDNSFuzzTarget(
        "server-query", "the server's query reader agrees with a reference split and percent-decoder, never grows its input"
    ) { bytes throws(HTTPDNSFuzzFailure) in
        let query = HTTPServerQuery(bytes)
        try require(query.raw == bytes, "the raw query is not the bytes sent")
        // The reference: split at `&` (empty parts dropped), then at the first `=`; names and
        // values decoded by `referenceDecode`.
        let parts = bytes.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true)
        let items = query.items
        try require(items.count == parts.count, "\(items.count) items from \(parts.count) parts")
        var decodedTotal = 0
        for (part, item) in zip(parts, items) {
            let equals = part.firstIndex(of: UInt8(ascii: "="))
            let name = referenceDecode(equals.map { part[..<$0] } ?? part, plusIsSpace: true)
            let value = equals.map { referenceDecode(part[($0 + 1)...], plusIsSpace: true) }
            try require(item.name == String(decoding: name, as: UTF8.self), "name \(item.name) read from \(Array(part))")
            try require(item.value == value.map { String(decoding: $0, as: UTF8.self) }, "value \(item.value ?? "nil") read from \(Array(part))")
            decodedTotal += name.count + (value?.count ?? 0)
        }
        try require(decodedTotal <= bytes.count, "decoded \(decodedTotal) bytes from \(bytes.count)")
        // Lookups by name see the first item of that name, and count every one (by the name's bytes).
        let names = parts.map { part in
            referenceDecode(part.firstIndex(of: UInt8(ascii: "=")).map { part[..<$0] } ?? part, plusIsSpace: true)
        }
        for (index, part) in parts.enumerated().prefix(8) {
            let name = String(decoding: names[index], as: UTF8.self)
            // Only a name that is UTF-8 can be asked for, and only its first item answers.
            guard Array(name.utf8) == names[index], names.firstIndex(of: names[index]) == index else { continue }
            let raw = part.firstIndex(of: UInt8(ascii: "=")).map { part[($0 + 1)...] }
            try require(query.value(name) == raw.map { referenceDecode($0, plusIsSpace: true) }, "value(\(name))")
            try require(query.rawValue(name) == (raw.map { referenceDecode($0, plusIsSpace: false) } ?? []), "rawValue(\(name))")
            try require(query.count(name) == names.filter { $0 == names[index] }.count, "count(\(name))")
        }
        // Where a name or value is UTF-8 with well-formed escapes, Foundation decodes it the same.
        for (part, item) in zip(parts, items) {
            let equals = part.firstIndex(of: UInt8(ascii: "="))
            let pieces = [(equals.map { part[..<$0] } ?? part, item.name)] + (equals.map { [(part[($0 + 1)...], item.value ?? "")] } ?? [])
            for (piece, read) in pieces where isWellFormedEscaping(piece) {
                let spaced = piece.map { $0 == UInt8(ascii: "+") ? UInt8(ascii: " ") : $0 }
                let text = String(decoding: spaced, as: UTF8.self)
                guard Array(text.utf8) == spaced, let reference = text.removingPercentEncoding else { continue }
                try require(read == reference, "Foundation reads \(Array(piece)) as \(reference), the server as \(read)")
            }
        }
        // The path decoder (`+` kept) never grows its input either.
        try require(HTTPServerQuery.decode(bytes[...], plusIsSpace: false).count <= bytes.count, "the path decode grew")
    }

    /// A straightforward percent-decoder: when every `%` starts a two-digit hex escape, each escape
    /// becomes its byte; otherwise the bytes are kept as sent. `+` is a space when `plusIsSpace`.
    private static func referenceDecode(_ bytes: ArraySlice<UInt8>, plusIsSpace: Bool) -> [UInt8] {
        let plus: (UInt8) -> UInt8 = { plusIsSpace && $0 == UInt8(ascii: "+") ? UInt8(ascii: " ") : $0 }
        guard isWellFormedEscaping(bytes) else { return bytes.map(plus) }
        var output: [UInt8] = []
        var index = bytes.startIndex
        while index < bytes.endIndex {
            if bytes[index] == UInt8(ascii: "%") {
                let text = String(decoding: bytes[(index + 1)...(index + 2)], as: UTF8.self)
                output.append(UInt8(text, radix: 16)!)
                index += 3
            } else {
                output.append(plus(bytes[index]))
                index += 1
            }
        }
        return output
    }

    /// Whether every `%` in `bytes` is followed by two hex digits.
    private static func isWellFormedEscaping(_ bytes: ArraySlice<UInt8>) -> Bool {
        let hex = Array("0123456789abcdefABCDEF".utf8)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            if bytes[index] == UInt8(ascii: "%") {
                guard index + 2 < bytes.endIndex, hex.contains(bytes[index + 1]), hex.contains(bytes[index + 2]) else { return false }
                index += 3
            } else {
                index += 1
            }
        }
        return true
    }
}

/// The server's RFC 8484 answering (`POST /dns-query`), where the encoded answers of zone queries are
/// kept: any message gets an answer and never a crash, and a query asked again, under its own ID or
/// another, gets the bytes that a service which never saw it gives.
extension HTTPDNSFuzzTarget {
    /// A zone with an address, a CNAME chain, a wildcard and an empty apex, as the DoH tests use.
    private static let serverZone = try! HTTPDNSZone(json: Data(#"""
        {"www.example.test": {"A": ["192.0.2.1", "192.0.2.2"], "AAAA": ["2001:db8::1"], "ttl": 120},
         "alias.example.test": {"CNAME": "www.example.test", "ttl": 90},
         "*.wild.example.test": {"A": ["192.0.2.9"]},
         "example.test": {}}
        """#.utf8))
    /// Keeps answers across inputs, as a running server does (and starts over when full).
    private static let keeping = HTTPDNSService(configuration: .init(zone: serverZone))

    static let serverDoH = HTTPDNSFuzzTarget(
        "server-doh", "DoH answers never crash; a query asked again (any ID) gets what a fresh service answers"
    ) { bytes throws(HTTPDNSFuzzFailure) in
        func post(_ message: [UInt8], to service: HTTPDNSService) -> (status: Int, headers: [HTTPServer.Header], body: [UInt8]) {
            let request = HTTPServer.Request(
                method: "POST", path: "/dns-query", headers: [.init(name: "Content-Type", value: HTTPDNSService.dnsMessageType)],
                body: Data(message))
            let response = service.handle(request)
            guard case .data(let body) = response.body else { return (response.status, response.headers, []) }
            return (response.status, response.headers, [UInt8](body))
        }
        let fresh = post(bytes, to: HTTPDNSService(configuration: .init(zone: serverZone)))
        let first = post(bytes, to: keeping)
        try require(first.status == fresh.status && first.headers == fresh.headers && first.body == fresh.body,
                    "a first answer differs from a fresh service's: \(first.status) vs \(fresh.status)")
        guard bytes.count >= 12 else { return }
        var again = bytes
        again[0] ^= 0x5a
        again[1] ^= 0xa5
        // The same query under another ID: what a service that never saw it answers (the ID can
        // matter: a compression pointer may read it).
        let second = post(again, to: keeping)
        let expected = post(again, to: HTTPDNSService(configuration: .init(zone: serverZone)))
        try require(second.status == expected.status && second.headers == expected.headers && second.body == expected.body,
                    "a repeated query's answer under another ID differs from a fresh service's")
    }
}
