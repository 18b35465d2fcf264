import HTTPDNSCore
import HTTPDNSServer

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
