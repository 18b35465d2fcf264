/// A small, bounded JSON reader (RFC 8259) for provider answers.
///
/// Written here instead of using Foundation so that limits are explicit and behaviour is the same
/// on every platform: at most ``maxDepth`` levels, duplicate object keys rejected (two different
/// readings of one answer are a classic smuggling trick), strict UTF-8 and number grammar, numbers
/// kept as text until a caller asks for an integer. Every error is `.malformedAnswer`.
///
/// `package` so that the server's zone loader reads its file with the same rules (and can say
/// where a fault is: ``SyntaxError`` carries the byte offset).
package enum HTTPDNSJSON: Equatable, Sendable {
    case null
    case bool(Bool)
    case number(String)
    case string(String)
    case array([HTTPDNSJSON])
    case object(HTTPDNSJSONObject)

    /// Deepest nesting accepted; provider answers use three or four levels.
    package static let maxDepth = 32

    /// Where and why a document is not JSON.
    package struct SyntaxError: Error, Sendable, Hashable {
        /// What is wrong (`duplicate key`, `expected ',' or '}'`, …).
        package var reason: String
        /// The byte offset of the fault (of the key, for a duplicate key).
        package var offset: Int
    }

    /// Parses a whole document; trailing non-whitespace is an error.
    package static func parse(_ bytes: [UInt8], source: String) throws(HTTPDNSError) -> HTTPDNSJSON {
        guard bytes.count <= HTTPDNSFormatLimits.maxBodyBytes else {
            throw HTTPDNSError.malformed("JSON body too large", source: source)
        }
        var keyOffsets: [Int]?
        do {
            return try parseDocument(bytes, topLevelKeyOffsets: &keyOffsets)
        } catch {
            throw HTTPDNSError.malformed("\(error.reason) at byte \(error.offset)", source: source)
        }
    }

    /// Parses a whole document of any size (the caller bounds it), reporting where a fault is.
    ///
    /// - Parameter topLevelKeyOffsets: when not `nil`, receives the byte offset of each key of the
    ///   top-level object, in document order (so that a later check can point at a member).
    package static func parseDocument(
        _ bytes: [UInt8], topLevelKeyOffsets: inout [Int]?
    ) throws(SyntaxError) -> HTTPDNSJSON {
        var reader = Reader(bytes: bytes)
        reader.keyOffsets = topLevelKeyOffsets
        let value = try reader.value(depth: 0)
        reader.skipWhitespace()
        guard reader.index == bytes.count else { throw reader.failure("trailing data after JSON") }
        topLevelKeyOffsets = reader.keyOffsets
        return value
    }

    package subscript(key: String) -> HTTPDNSJSON? {
        if case .object(let object) = self { return object[key] }
        return nil
    }

    package var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    package var arrayValue: [HTTPDNSJSON]? {
        if case .array(let items) = self { return items }
        return nil
    }

    package var isObject: Bool {
        if case .object = self { return true }
        return false
    }

    /// The value as an `Int` when it is a JSON integer (no fraction, no exponent) that fits.
    package var intValue: Int? {
        guard case .number(let text) = self,
              !text.utf8.contains(where: { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") })
        else {
            return nil
        }
        return Int(text)
    }
}

extension HTTPDNSJSON {
    private struct Reader {
        let bytes: [UInt8]
        var index = 0
        /// Offsets of the top-level object's keys, when the caller asked for them.
        var keyOffsets: [Int]?

        init(bytes: [UInt8]) {
            self.bytes = bytes
        }

        func failure(_ detail: String, at offset: Int? = nil) -> SyntaxError {
            SyntaxError(reason: detail, offset: offset ?? index)
        }

        mutating func skipWhitespace() {
            while index < bytes.count {
                let byte = bytes[index]
                guard byte == 0x20 || byte == 0x09 || byte == 0x0a || byte == 0x0d else { return }
                index += 1
            }
        }

        mutating func expect(_ literal: String) throws(SyntaxError) {
            for byte in literal.utf8 {
                guard index < bytes.count, bytes[index] == byte else { throw failure("bad literal") }
                index += 1
            }
        }

        mutating func value(depth: Int) throws(SyntaxError) -> HTTPDNSJSON {
            guard depth < HTTPDNSJSON.maxDepth else { throw failure("JSON nested too deeply") }
            skipWhitespace()
            guard index < bytes.count else { throw failure("unexpected end of JSON") }
            switch bytes[index] {
            case UInt8(ascii: "{"): return try object(depth: depth)
            case UInt8(ascii: "["): return try array(depth: depth)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): try expect("true"); return .bool(true)
            case UInt8(ascii: "f"): try expect("false"); return .bool(false)
            case UInt8(ascii: "n"): try expect("null"); return .null
            default: return .number(try number())
            }
        }

        mutating func object(depth: Int) throws(SyntaxError) -> HTTPDNSJSON {
            index += 1
            var members = HTTPDNSJSONObject()
            // Keys seen, for the duplicate check once an object outgrows a linear scan.
            var keys: Set<String>?
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object(members)
            }
            // Provider objects hold a handful of members: one allocation instead of regrowing.
            members.members.reserveCapacity(8)
            while true {
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw failure("expected a key") }
                let keyStart = index
                if depth == 0, keyOffsets != nil { keyOffsets!.append(keyStart) }
                let key = try string()
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw failure("expected ':'") }
                index += 1
                let member = try value(depth: depth + 1)
                if members.members.count < 16 {
                    guard members[key] == nil else { throw failure("duplicate key", at: keyStart) }
                } else {
                    if keys == nil { keys = Set(members.members.map(\.key)) }
                    guard keys!.insert(key).inserted else { throw failure("duplicate key", at: keyStart) }
                }
                members.members.append((key, member))
                skipWhitespace()
                guard index < bytes.count else { throw failure("unterminated object") }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                guard bytes[index] == UInt8(ascii: "}") else { throw failure("expected ',' or '}'") }
                index += 1
                return .object(members)
            }
        }

        mutating func array(depth: Int) throws(SyntaxError) -> HTTPDNSJSON {
            index += 1
            var items: [HTTPDNSJSON] = []
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(items)
            }
            while true {
                items.append(try value(depth: depth + 1))
                skipWhitespace()
                guard index < bytes.count else { throw failure("unterminated array") }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                guard bytes[index] == UInt8(ascii: "]") else { throw failure("expected ',' or ']'") }
                index += 1
                return .array(items)
            }
        }

        mutating func number() throws(SyntaxError) -> String {
            let start = index
            func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, isDigit(bytes[index]) else { throw failure("bad number") }
            if bytes[index] == UInt8(ascii: "0") {
                index += 1
            } else {
                while index < bytes.count, isDigit(bytes[index]) { index += 1 }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                guard index < bytes.count, isDigit(bytes[index]) else { throw failure("bad fraction") }
                while index < bytes.count, isDigit(bytes[index]) { index += 1 }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
                guard index < bytes.count, isDigit(bytes[index]) else { throw failure("bad exponent") }
                while index < bytes.count, isDigit(bytes[index]) { index += 1 }
            }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }

        mutating func hex4() throws(SyntaxError) -> UInt32 {
            guard index + 4 <= bytes.count else { throw failure("truncated \\u escape") }
            var value: UInt32 = 0
            for byte in bytes[index..<index + 4] {
                let digit: UInt8
                switch byte {
                case 0x30...0x39: digit = byte - 0x30
                case 0x61...0x66: digit = byte - 0x61 + 10
                case 0x41...0x46: digit = byte - 0x41 + 10
                default: throw failure("bad \\u escape")
                }
                value = value << 4 | UInt32(digit)
            }
            index += 4
            return value
        }

        mutating func string() throws(SyntaxError) -> String {
            index += 1
            // Fast path: no escape before the closing quote (every key and almost every value).
            var end = index
            var ascii = true
            while end < bytes.count, bytes[end] != UInt8(ascii: "\""), bytes[end] != UInt8(ascii: "\\"), bytes[end] >= 0x20 {
                ascii = ascii && bytes[end] < 0x80
                end += 1
            }
            if end < bytes.count, bytes[end] == UInt8(ascii: "\"") {
                let run = bytes[index..<end]
                index = end + 1
                // ASCII is valid UTF-8 as it is (and `decoding` has a fast path for it); anything else
                // is validated strictly: a lossy repair could turn junk into a plausible name.
                if ascii { return String(decoding: run, as: UTF8.self) }
                guard let text = String(validating: run, as: UTF8.self) else { throw failure("invalid UTF-8") }
                return text
            }
            var out: [UInt8] = []
            while true {
                guard index < bytes.count else { throw failure("unterminated string") }
                let byte = bytes[index]
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    // Validate UTF-8 strictly: a lossy repair could turn junk into a plausible name.
                    guard let text = String(validating: out, as: UTF8.self) else { throw failure("invalid UTF-8") }
                    return text
                case UInt8(ascii: "\\"):
                    guard index < bytes.count else { throw failure("truncated escape") }
                    let escape = bytes[index]
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0c)
                    case UInt8(ascii: "n"): out.append(0x0a)
                    case UInt8(ascii: "r"): out.append(0x0d)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "u"):
                        var scalar = try hex4()
                        if (0xd800...0xdbff).contains(scalar) {
                            guard index + 2 <= bytes.count, bytes[index] == UInt8(ascii: "\\"),
                                  bytes[index + 1] == UInt8(ascii: "u") else { throw failure("lone surrogate") }
                            index += 2
                            let low = try hex4()
                            guard (0xdc00...0xdfff).contains(low) else { throw failure("bad surrogate pair") }
                            scalar = 0x10000 + ((scalar - 0xd800) << 10) + (low - 0xdc00)
                        }
                        guard let unicode = Unicode.Scalar(scalar) else { throw failure("lone surrogate") }
                        out += Array(String(Character(unicode)).utf8)
                    default:
                        throw failure("bad escape")
                    }
                default:
                    guard byte >= 0x20 else { throw failure("control character in string") }
                    out.append(byte)
                }
            }
        }
    }
}

/// A JSON object's members in document order (keys are unique: the parser rejects duplicates).
///
/// An array rather than a dictionary: provider answers hold a handful of keys, read once or twice,
/// so comparing keys costs less than hashing them and building hash tables.
package struct HTTPDNSJSONObject: Equatable, Sendable, ExpressibleByDictionaryLiteral {
    package var members: [(key: String, value: HTTPDNSJSON)] = []

    package init() {}

    package init(dictionaryLiteral elements: (String, HTTPDNSJSON)...) {
        members = elements.map { (key: $0.0, value: $0.1) }
    }

    package subscript(key: String) -> HTTPDNSJSON? {
        members.first { $0.key == key }?.value
    }

    /// Equal when the same keys map to equal values, in any order (as JSON objects compare).
    package static func == (lhs: HTTPDNSJSONObject, rhs: HTTPDNSJSONObject) -> Bool {
        lhs.members.count == rhs.members.count && lhs.members.allSatisfy { rhs[$0.key] == $0.value }
    }
}
