import HTTPDNSCore
import HTTPDNSNetworking

/// What the loopback proxy reads from its clients: the request head (``ProxyRequestHead``), parsed
/// before anything reaches an upstream.
extension HTTPDNSFuzzTarget {
    static let proxyRequestHead = HTTPDNSFuzzTarget(
        "proxy-request-head",
        "a proxy request head is read the same alone, followed by tunnel bytes and written out again; every prefix waits; never buffers past the limit"
    ) { bytes throws(HTTPDNSFuzzFailure) in
        let parsed: ProxyRequestHead.Parse
        do throws(ProxyHeadError) {
            parsed = try ProxyRequestHead.parse(bytes)
        } catch {
            try require([400, 431, 501, 505].contains(error.status), "status \(error.status) for \(error)")
            return
        }
        guard case .complete(let head, let length) = parsed else {
            try require(bytes.count <= ProxyRequestHead.maximumBytes, "still waiting after \(bytes.count) bytes")
            return
        }
        try require(length >= 4 && length <= min(bytes.count, ProxyRequestHead.maximumBytes), "a head of \(length) of \(bytes.count) bytes")
        try require(Array(bytes[(length - 4)..<length]) == Array("\r\n\r\n".utf8), "the head does not end in an empty line")
        try checkInvariants(head)
        // The head alone, and followed by what a tunnel would carry, reads the same.
        let alone = Array(bytes.prefix(length))
        try require((try? ProxyRequestHead.parse(alone)) == parsed, "the head alone reads differently")
        try require((try? ProxyRequestHead.parse(alone + [0x16, 0x03, 0x01, 0x0D, 0x0A])) == parsed, "tunnel bytes change the head")
        // Every proper prefix is a head still arriving (checked at up to 64 cut points).
        let step = max(1, length / 64)
        for cut in stride(from: 0, to: length, by: step) {
            try require((try? ProxyRequestHead.parse(alone.prefix(cut))) == .incomplete, "the first \(cut) bytes are not .incomplete")
        }
        // Written out again from what was understood, the head reads back as the same head.
        let written = serialized(head)
        guard case .complete(let again, _)? = try? ProxyRequestHead.parse(written) else {
            throw HTTPDNSFuzzFailure(detail: "the head written out is refused: \(String(decoding: written, as: UTF8.self).debugDescription)")
        }
        try require(again == head, "written out and read back: \(again) instead of \(head)")
    }

    /// What any accepted head satisfies (RFC 9110 tokens, RFC 9112 framing, the proxy's limits).
    private static func checkInvariants(_ head: ProxyRequestHead) throws(HTTPDNSFuzzFailure) {
        try require(!head.method.isEmpty && head.method.utf8.count <= ProxyRequestHead.maximumMethodBytes
                    && head.method.utf8.allSatisfy(ProxyRequestHead.isTokenByte), "method \(head.method.debugDescription)")
        try require(head.minorVersion == 0 || head.minorVersion == 1, "HTTP/1.\(head.minorVersion)")
        try require(head.fields.count <= ProxyRequestHead.maximumFields, "\(head.fields.count) fields")
        for field in head.fields {
            try require(!field.name.isEmpty && field.name.utf8.allSatisfy(ProxyRequestHead.isTokenByte), "field name \(field.name.debugDescription)")
            let value = ProxyLatin1.bytes(field.value)
            try require(value.allSatisfy { $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }, "control byte in \(field.value.debugDescription)")
            try require(value.first.map { $0 != 0x20 && $0 != 0x09 } ?? true, "leading blank in \(field.value.debugDescription)")
            try require(value.last.map { $0 != 0x20 && $0 != 0x09 } ?? true, "trailing blank in \(field.value.debugDescription)")
        }
        try require(head.value(of: "content-length") == nil || head.value(of: "transfer-encoding") == nil, "both body lengths")
        try require(head.target.port >= 1, "port 0")
        let host = head.target.host
        let literal = HTTPDNSIPAddress(host)
        try require(literal.map { $0.description == host } ?? HTTPDNSHostPolicy.isValidHostName(host), "host \(host.debugDescription)")
        try require(literal != nil || HTTPDNSHostPolicy.normalize(host) == host, "host \(host.debugDescription) not normalised")
        switch head.target {
        case .tunnel: try require(head.method == "CONNECT", "a tunnel for \(head.method)")
        case .forward(_, _, let path):
            try require(head.method != "CONNECT", "CONNECT forwarded")
            try require(path.hasPrefix("/") && !path.contains("#"), "path \(path.debugDescription)")
        }
    }

    /// `head` as a client would send it.
    private static func serialized(_ head: ProxyRequestHead) -> [UInt8] {
        let host = head.target.host.contains(":") ? "[\(head.target.host)]" : head.target.host
        let target: String
        switch head.target {
        case .tunnel(_, let port): target = "\(host):\(port)"
        case .forward(_, let port, let path): target = "http://\(host):\(port)\(path)"
        }
        var text = "\(head.method) \(target) HTTP/1.\(head.minorVersion)\r\n"
        for field in head.fields { text += "\(field.name): \(field.value)\r\n" }
        return ProxyLatin1.bytes(text + "\r\n")
    }
}
