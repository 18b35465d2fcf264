@_spi(HTTPDNSPackage) import HTTPDNSCore

/// Forwarded plain-HTTP requests: one request per client connection, both heads rewritten to say
/// `Connection: close` (RFC 9112 §9.6), so that neither side ever reuses a connection the proxy
/// would have to re-frame. Bodies are passed through as bytes, never parsed; field values keep
/// their bytes (``ProxyLatin1``).
enum ProxyForwarding {
    /// Hop-by-hop fields (RFC 9110 §7.6.1) dropped in both directions, plus those the proxy sets.
    static let hopByHop: Set<String> = [
        "connection", "proxy-connection", "keep-alive", "proxy-authorization", "proxy-authenticate", "te", "trailer",
        "upgrade", "host",
    ]

    /// The head sent upstream: origin-form target, `Host` from the URL, the client's end-to-end
    /// fields, `Connection: close`.
    static func upstreamHead(_ head: ProxyRequestHead) -> [UInt8] {
        guard case .forward(let host, let port, let path) = head.target else { return [] }
        let dropped = droppedNames(head.fields)
        let hostText = host.contains(":") ? "[\(host)]" : host
        var text = "\(head.method) \(path) HTTP/1.1\r\nHost: \(hostText)\(port == 80 ? "" : ":\(port)")\r\n"
        for field in head.fields where !dropped.contains(HTTPDNSASCII.lowercased(field.name.utf8)) {
            text += "\(field.name): \(field.value)\r\n"
        }
        text += "Connection: close\r\n\r\n"
        return ProxyLatin1.bytes(text)
    }

    /// Names to drop: the hop-by-hop list and every name the `Connection` field lists.
    static func droppedNames(_ fields: [ProxyRequestHead.Field]) -> Set<String> {
        var dropped = hopByHop
        for field in fields where HTTPDNSASCII.equalsIgnoringCase(field.name, "connection") {
            for option in field.value.split(separator: ",") {
                dropped.insert(HTTPDNSASCII.lowercased(option.trimmingBlanks.utf8))
            }
        }
        return dropped
    }

    /// What the response scanner found at the start of the upstream's bytes.
    enum ResponseScan: Equatable {
        /// No complete head yet.
        case incomplete
        /// A complete head of `length` bytes; `rewritten` goes to the client in its place.
        /// `final` is false for 1xx interim responses (another head follows).
        case head(rewritten: [UInt8], length: Int, final: Bool)
    }

    /// Most bytes of one response head the proxy reads before giving up (502).
    static let maximumResponseHeadBytes = 64 * 1024

    /// Scans the upstream's first bytes for a response head (RFC 9112 §4) and rewrites its
    /// connection fields; interim (1xx) heads pass unchanged.
    ///
    /// - Throws: ``ProxyHeadError`` when the bytes are not an HTTP/1.x response head or it is too large.
    static func scanResponse(_ bytes: ArraySlice<UInt8>) throws(ProxyHeadError) -> ResponseScan {
        guard let end = headEnd(bytes) else {
            if bytes.count > maximumResponseHeadBytes { throw ProxyHeadError(.tooLarge, "response head too large") }
            if bytes.count >= 5, !bytes.prefix(5).elementsEqual("HTTP/".utf8) {
                throw ProxyHeadError(.malformed, "not an HTTP response")
            }
            return .incomplete
        }
        let head = bytes[bytes.startIndex..<end]
        var lines = head.split(separator: 0x0A, omittingEmptySubsequences: true).map { line in
            line.last == 0x0D ? line.dropLast() : line
        }.filter { !$0.isEmpty }
        guard !lines.isEmpty else { throw ProxyHeadError(.malformed, "empty response head") }
        let statusLine = lines.removeFirst()
        guard statusLine.count >= 12, statusLine.prefix(7).elementsEqual("HTTP/1.".utf8),
              statusLine[statusLine.startIndex + 8] == 0x20,
              let status = Int(String(decoding: statusLine[(statusLine.startIndex + 9)..<(statusLine.startIndex + 12)], as: UTF8.self))
        else { throw ProxyHeadError(.malformed, "bad status line") }
        let length = end - bytes.startIndex
        if (100..<200).contains(status) {
            return .head(rewritten: Array(head), length: length, final: status == 101)
        }
        var fields: [ProxyRequestHead.Field] = []
        for line in lines {
            guard let colon = line.firstIndex(of: 0x3A) else { throw ProxyHeadError(.malformed, "bad response header line") }
            // RFC 9112 §5.1: blanks between a response field's name and its colon are removed.
            fields.append(.init(
                name: ProxyLatin1.string(line[line.startIndex..<colon]).trimmingBlanks,
                value: ProxyLatin1.string(line[(colon + 1)...]).trimmingBlanks))
        }
        var dropped = droppedNames(fields)
        dropped.remove("host")
        dropped.remove("proxy-authenticate")
        var text = ProxyLatin1.string(statusLine) + "\r\n"
        for field in fields where !dropped.contains(HTTPDNSASCII.lowercased(field.name.utf8)) {
            text += "\(field.name): \(field.value)\r\n"
        }
        text += "Connection: close\r\n\r\n"
        return .head(rewritten: ProxyLatin1.bytes(text), length: length, final: true)
    }

    /// The index just past the first blank line (CRLFCRLF, or LFLF from lenient servers).
    private static func headEnd(_ bytes: ArraySlice<UInt8>) -> Int? {
        var index = bytes.startIndex
        while index < bytes.endIndex {
            if bytes[index] == 0x0A {
                if index + 2 < bytes.endIndex, bytes[index + 1] == 0x0D, bytes[index + 2] == 0x0A {
                    return index + 3
                }
                if index + 1 < bytes.endIndex, bytes[index + 1] == 0x0A { return index + 2 }
            }
            index += 1
        }
        return nil
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs.
    var trimmingBlanks: String {
        var text = Substring(self)
        while let first = text.first, first == " " || first == "\t" { text = text.dropFirst() }
        while let last = text.last, last == " " || last == "\t" { text = text.dropLast() }
        return String(text)
    }
}
