extension DNSName {
    /// Parses presentation format (RFC 1035 §5.1): labels separated by dots, an optional trailing
    /// dot, `\.` and `\\` escapes and `\DDD` decimal escapes for any byte. `"."` is the root.
    ///
    /// The name is always taken as absolute; `"www.example.com"` and `"www.example.com."` are equal.
    ///
    /// - Throws: ``DNSWireError`` `.invalidName` (empty label, bad escape), `.labelTooLong`, `.nameTooLong`.
    package init(_ text: String) throws {
        let bytes = Array(text.utf8)
        if bytes == [UInt8(ascii: ".")] {
            self = .root
            return
        }
        func invalid(_ why: String, _ at: Int) -> DNSWireError {
            DNSWireError(.invalidName, offset: at, section: .text, field: why)
        }
        guard !bytes.isEmpty else { throw invalid("empty name", 0) }
        var labels: [[UInt8]] = []
        var label: [UInt8] = []
        var index = 0
        var endedWithDot = false
        while index < bytes.count {
            let byte = bytes[index]
            endedWithDot = false
            if byte == UInt8(ascii: ".") {
                if label.isEmpty { throw invalid("empty label", index) }
                labels.append(label)
                label = []
                endedWithDot = true
                index += 1
            } else if byte == UInt8(ascii: "\\") {
                guard index + 1 < bytes.count else { throw invalid("dangling escape", index) }
                let next = bytes[index + 1]
                if next >= 0x30, next <= 0x39 {
                    guard index + 3 < bytes.count,
                          let value = Self.decimal(bytes[(index + 1)...(index + 3)]), value <= 255
                    else { throw invalid("bad \\DDD escape", index) }
                    label.append(UInt8(value))
                    index += 4
                } else {
                    label.append(next)
                    index += 2
                }
            } else {
                label.append(byte)
                index += 1
            }
            if label.count > Self.maxLabelLength {
                throw DNSWireError(.labelTooLong, offset: index, section: .text)
            }
        }
        if !endedWithDot { labels.append(label) }
        try self.init(labels: labels)
    }

    /// Parses a host name as used in URLs: letters, digits, `-` and `_` in each label, no label
    /// starting or ending with `-`, an optional trailing dot, no escapes.
    ///
    /// This is the check to run before handing a name to `getaddrinfo` or a DNS server.
    /// IP literals are not host names and are rejected only if they break these rules (callers
    /// should test for literals first).
    ///
    /// - Throws: ``DNSWireError`` `.invalidName`, `.labelTooLong`, `.nameTooLong`.
    package init(hostName text: String) throws {
        var body = Substring(text)
        if body.hasSuffix(".") { body = body.dropLast() }
        guard !body.isEmpty else { throw DNSWireError(.invalidName, offset: 0, section: .text, field: "empty host") }
        var labels: [[UInt8]] = []
        var offset = 0
        for part in body.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false) {
            let label = Array(part)
            let valid = !label.isEmpty
                && label.first != UInt8(ascii: "-") && label.last != UInt8(ascii: "-")
                && label.allSatisfy(Self.isHostNameByte)
            guard valid else {
                throw DNSWireError(.invalidName, offset: offset, section: .text, field: "bad host label")
            }
            labels.append(label)
            offset += label.count + 1
        }
        try self.init(labels: labels)
    }

    /// Presentation text with a trailing dot (`www.example.com.`); the root is `.`.
    package var description: String { text(trailingDot: true) }

    /// Presentation text; odd bytes are escaped so that the text parses back to the same name.
    ///
    /// - Parameter trailingDot: end with `.` as dig prints names (the root is always `.`).
    package func text(trailingDot: Bool = false) -> String {
        if labels.isEmpty { return "." }
        // Sized for the common case (no escapes) up front: one buffer, one string.
        var out: [UInt8] = []
        out.reserveCapacity(wireLength + 1)
        for (position, label) in labels.enumerated() {
            if position > 0 { out.append(UInt8(ascii: ".")) }
            for byte in label {
                switch byte {
                case UInt8(ascii: "."), UInt8(ascii: "\\"):
                    out.append(UInt8(ascii: "\\"))
                    out.append(byte)
                case 0x21...0x7E:
                    out.append(byte)
                default:
                    out.append(UInt8(ascii: "\\"))
                    out.append(0x30 + byte / 100)
                    out.append(0x30 + byte / 10 % 10)
                    out.append(0x30 + byte % 10)
                }
            }
        }
        if trailingDot { out.append(UInt8(ascii: ".")) }
        return String(decoding: out, as: UTF8.self)
    }

    private static func isHostNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
            true
        default:
            false
        }
    }

    private static func decimal(_ digits: ArraySlice<UInt8>) -> Int? {
        var value = 0
        for digit in digits {
            guard digit >= 0x30, digit <= 0x39 else { return nil }
            value = value * 10 + Int(digit - 0x30)
        }
        return value
    }
}
