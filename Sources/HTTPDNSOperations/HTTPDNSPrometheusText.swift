/// The Prometheus text exposition format 0.0.4, written once for every exporter here: the service's
/// `/metrics` (with its health, transfer and report families) and the stub's.
///
/// Each family is a `# HELP` and a `# TYPE` line, then its samples, `name{labels} value`; every name
/// takes ``prefix``. Label sets are written by the caller (`endpoint="doh-post"`), with values from
/// outside escaped by ``labelValue(_:)`` or quoted by ``label(_:)``.
package struct HTTPDNSPrometheusText: Sendable {
    /// The `Content-Type` of the text.
    package static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// The start of every name: `httpdns_` for the service, `httpdns_stub_` for the stub.
    package let prefix: String
    /// The text so far.
    package private(set) var text = ""

    /// An empty text whose names start with `prefix`, with room for `capacity` bytes.
    package init(prefix: String, capacity: Int = 0) {
        self.prefix = prefix
        text.reserveCapacity(capacity)
    }

    /// A family's `# HELP` and `# TYPE` lines.
    package mutating func family(_ name: String, _ type: String, _ help: String) {
        text += "# HELP \(prefix)\(name) \(help)\n# TYPE \(prefix)\(name) \(type)\n"
    }

    /// One sample; `labels` as written inside the braces (none when empty).
    package mutating func sample(_ name: String, _ labels: String, _ value: some BinaryInteger) {
        sample(name, labels, String(value))
    }

    /// One sample whose value is already text (``seconds(fromMicroseconds:)``).
    package mutating func sample(_ name: String, _ labels: String, _ value: String) {
        text += "\(prefix)\(name)\(labels.isEmpty ? "" : "{\(labels)}") \(value)\n"
    }

    /// Families another writer rendered (with the same prefix), appended as they are.
    package mutating func append(_ other: HTTPDNSPrometheusText) {
        text += other.text
    }

    /// A label value escaped as the text format requires (`\`, `"` and newline), scalar by scalar
    /// (a `\r\n` pair is one `Character` but its newline must be escaped too).
    package static func labelValue(_ value: String) -> String {
        var escaped = String.UnicodeScalarView()
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\\": escaped.append(contentsOf: #"\\"#.unicodeScalars)
            case "\"": escaped.append(contentsOf: #"\""#.unicodeScalars)
            case "\n": escaped.append(contentsOf: #"\n"#.unicodeScalars)
            default: escaped.append(scalar)
            }
        }
        return String(escaped)
    }

    /// A label value escaped and quoted: `"value"`.
    package static func label(_ value: String) -> String {
        "\"" + labelValue(value) + "\""
    }

    /// Exact decimal seconds (`0.00025`, `2.5`, `10`): no floating-point rounding in the output.
    package static func seconds(fromMicroseconds micros: UInt64) -> String {
        let whole = micros / 1_000_000
        var fraction = micros % 1_000_000
        guard fraction > 0 else { return "\(whole)" }
        var digits = 6
        while fraction % 10 == 0 {
            fraction /= 10
            digits -= 1
        }
        let text = String(fraction)
        return "\(whole)." + String(repeating: "0", count: digits - text.count) + text
    }
}
