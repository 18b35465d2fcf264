import HTTPDNSCore

/// Writes the small JSON documents the service answers with, members in the order given, so that
/// answers are byte-for-byte the documented vendor examples.
struct HTTPDNSServiceJSON {
    private(set) var text = ""

    /// A JSON string literal (RFC 8259 §7).
    static func string(_ value: String) -> String {
        HTTPDNSJSONText.quote(value)
    }

    /// `["a","b"]`.
    static func array(_ values: [String]) -> String {
        "[" + values.map(string).joined(separator: ",") + "]"
    }

    /// `{"k":v,…}` from already-encoded values.
    static func object(_ members: [(String, String)]) -> String {
        "{" + members.map { string($0.0) + ":" + $0.1 }.joined(separator: ",") + "}"
    }
}
