import HTTPDNSCore

/// The status document of `serve`'s `/status` and the stub's: a JSON value whose objects keep their
/// members in order, so that one document renders as JSON (``json``) and as the console's HTML page
/// (``HTTPDNSStatusPage``) with the same sections in the same order.
package indirect enum HTTPDNSStatusValue: Sendable, Equatable {
    case object([Member])
    case array([HTTPDNSStatusValue])
    case string(String)
    /// A number as JSON text (`3`, `0.25`), written as it is.
    case number(String)
    case bool(Bool)
    case null

    /// One member of an object.
    package struct Member: Sendable, Equatable {
        package var name: String
        package var value: HTTPDNSStatusValue

        package init(_ name: String, _ value: HTTPDNSStatusValue) {
            self.name = name
            self.value = value
        }
    }

    /// An integer.
    package static func integer(_ value: some BinaryInteger) -> HTTPDNSStatusValue {
        .number(String(value))
    }

    /// A number rounded to `digits` decimals (`0.0123`, never `1e-05`: an operator reads the page),
    /// trailing zeros dropped; `null` when not finite or too large to round exactly.
    package static func decimal(_ value: Double, digits: Int = 4) -> HTTPDNSStatusValue {
        let scale = (0..<digits).reduce(Int64(1)) { product, _ in product * 10 }
        let scaled = (value * Double(scale)).rounded()
        guard scaled.isFinite, abs(scaled) < 9e15 else { return .null }
        let units = Int64(scaled)
        var fraction = String(units.magnitude % UInt64(scale))
        fraction = String(repeating: "0", count: digits - fraction.count) + fraction
        while fraction.hasSuffix("0") { fraction.removeLast() }
        let whole = (units < 0 ? "-" : "") + String(units.magnitude / UInt64(scale))
        return .number(fraction.isEmpty ? whole : whole + "." + fraction)
    }

    /// An object from `(name, value)` pairs, in order.
    package static func object(_ members: [(String, HTTPDNSStatusValue)]) -> HTTPDNSStatusValue {
        .object(members.map { Member($0.0, $0.1) })
    }

    /// The value read from a parsed JSON document (member order kept).
    package init(_ json: HTTPDNSJSON) {
        switch json {
        case .null: self = .null
        case .bool(let value): self = .bool(value)
        case .number(let text): self = .number(text)
        case .string(let text): self = .string(text)
        case .array(let items): self = .array(items.map(HTTPDNSStatusValue.init))
        case .object(let object): self = .object(object.members.map { Member($0.key, HTTPDNSStatusValue($0.value)) })
        }
    }

    /// The value of a JSON text (a status document written elsewhere as JSON).
    /// - Throws: ``HTTPDNSJSON/SyntaxError`` when `text` is not JSON.
    package init(json text: String) throws(HTTPDNSJSON.SyntaxError) {
        var offsets: [Int]?
        self.init(try HTTPDNSJSON.parseDocument(Array(text.utf8), topLevelKeyOffsets: &offsets))
    }

    /// The member `name` of an object, nil otherwise.
    package subscript(name: String) -> HTTPDNSStatusValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.name == name }?.value
    }

    /// Whether the value is a string, number, boolean or null (one table cell).
    package var isScalar: Bool {
        switch self {
        case .object, .array: false
        default: true
        }
    }

    /// The value as compact JSON (RFC 8259), members in order.
    package var json: String {
        var out = ""
        write(into: &out)
        return out
    }

    private func write(into out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let value): out += value ? "true" : "false"
        case .number(let text): out += text
        case .string(let text): out += HTTPDNSJSONText.quote(text)
        case .array(let items):
            out += "["
            for (index, item) in items.enumerated() {
                if index > 0 { out += "," }
                item.write(into: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (index, member) in members.enumerated() {
                if index > 0 { out += "," }
                out += HTTPDNSJSONText.quote(member.name) + ":"
                member.value.write(into: &out)
            }
            out += "}"
        }
    }
}
