/// A query string, split and percent-decoded once from its bytes, without Foundation.
///
/// `+` is a space in ``value(_:)`` and ``string(_:)`` (HTML forms), and kept in ``rawValue(_:)``
/// (base64 uses it: RFC 8484's `dns=`). An item whose escapes are broken (`%zz`, a lone `%`) keeps
/// its bytes as sent, as a lenient reader would.
package struct HTTPServerQuery: Sendable {
    struct Item: Sendable {
        var name: [UInt8]
        /// Where the value lies in ``raw`` (decoded when asked for); nil for a bare name.
        var value: Range<Int>?
    }

    /// The bytes after `?`; nil when the target had no `?`.
    package let raw: [UInt8]?
    let parsed: [Item]

    package init() {
        raw = nil
        parsed = []
    }

    /// Parses `bytes`, the part of a request target after `?`.
    package init<Bytes: Collection<UInt8>>(_ bytes: Bytes) {
        let raw = Array(bytes)
        self.raw = raw
        var items: [Item] = []
        var start = 0
        while start <= raw.count {
            let end = raw[start...].firstIndex(of: UInt8(ascii: "&")) ?? raw.count
            if end > start {
                let part = raw[start..<end]
                if let equals = part.firstIndex(of: UInt8(ascii: "=")) {
                    items.append(Item(name: Self.decode(part[..<equals], plusIsSpace: true), value: (equals + 1)..<end))
                } else {
                    items.append(Item(name: Self.decode(part, plusIsSpace: true), value: nil))
                }
            }
            start = end + 1
        }
        parsed = items
    }

    /// Parses the query of `text`, the part after `?`.
    package init(_ text: String) {
        self.init(Array(text.utf8))
    }

    /// The query string as sent, or nil.
    package var rawText: String? { raw.map { String(decoding: $0, as: UTF8.self) } }

    /// The first decoded value of `name` (`+` read as a space); nil when absent or bare.
    package func value(_ name: String) -> [UInt8]? {
        guard let raw, let range = item(name)?.value else { return nil }
        return Self.decode(raw[range], plusIsSpace: true)
    }

    /// The first value of `name` as text (bytes that are not UTF-8 become U+FFFD).
    package func string(_ name: String) -> String? {
        value(name).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The first value of `name`, percent-decoded with `+` kept; empty for a bare `name`.
    package func rawValue(_ name: String) -> [UInt8]? {
        guard let raw, let item = item(name) else { return nil }
        return item.value.map { Self.decode(raw[$0], plusIsSpace: false) } ?? []
    }

    /// How many times `name` occurs.
    package func count(_ name: String) -> Int {
        parsed.reduce(0) { $0 + ($1.name.elementsEqual(name.utf8) ? 1 : 0) }
    }

    /// Every item as text.
    package var items: [HTTPServer.QueryItem] {
        parsed.map { item in
            HTTPServer.QueryItem(
                name: String(decoding: item.name, as: UTF8.self),
                value: item.value.map { String(decoding: Self.decode(raw![$0], plusIsSpace: true), as: UTF8.self) })
        }
    }

    private func item(_ name: String) -> Item? {
        parsed.first { $0.name.elementsEqual(name.utf8) }
    }

    /// `%XX` decoded (and `+` → space when asked); the bytes unchanged when an escape is broken.
    package static func decode(_ bytes: ArraySlice<UInt8>, plusIsSpace: Bool) -> [UInt8] {
        guard bytes.contains(where: { $0 == UInt8(ascii: "%") || (plusIsSpace && $0 == UInt8(ascii: "+")) }) else {
            return Array(bytes)
        }
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%") {
                guard index + 2 < bytes.endIndex, let high = hex(bytes[index + 1]), let low = hex(bytes[index + 2])
                else {
                    return plusIsSpace ? bytes.map { $0 == UInt8(ascii: "+") ? UInt8(ascii: " ") : $0 } : Array(bytes)
                }
                output.append(high << 4 | low)
                index += 3
            } else {
                output.append(plusIsSpace && byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
                index += 1
            }
        }
        return output
    }

    static func hex(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
