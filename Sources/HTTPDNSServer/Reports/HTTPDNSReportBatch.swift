import HTTPDNSCore

/// One `POST /report` body: the addresses an app failed to reach (seed 002: "upload an error log to
/// the server and ask whether the address set should change").
///
/// `{"reports":[{"host":"www.example.test","address":"192.0.2.1","port":443,"error":"connect-timeout","time":1796300000}]}`
///
/// Read strictly through ``HTTPDNSJSON`` (duplicate keys, bad UTF-8 and deep nesting refused): the
/// top level holds `reports` and nothing else, each item exactly the five members, 1 to
/// ``maxItems`` items in at most ``maxBodyBytes`` bytes. A member that is missing, unknown or of the
/// wrong type refuses the whole batch with a ``ParseError`` naming the item and the member, so a
/// client bug shows up at once instead of half a batch being counted.
package struct HTTPDNSReportBatch: Sendable, Hashable {
    /// Why the app could not use the address (the error classes of the wire contract).
    package typealias Failure = HTTPDNSReportWire.ErrorClass

    /// One failed address (the wire contract's item).
    package typealias Item = HTTPDNSReportWire.Item

    /// Why a body was refused; compare by ``code``, show ``detail`` (it never echoes the body).
    package struct ParseError: Error, Sendable, Hashable, CustomStringConvertible {
        package enum Code: String, Sendable, Hashable {
            /// Over ``HTTPDNSReportBatch/maxBodyBytes`` (413).
            case tooLarge
            /// Not JSON (400).
            case syntax
            /// JSON of the wrong shape: a member missing, unknown, of the wrong type or out of range (400).
            case invalid
        }

        package var code: Code
        package var detail: String

        package init(_ code: Code, _ detail: String) {
            self.code = code
            self.detail = detail
        }

        package var description: String { "report body \(code.rawValue): \(detail)" }
    }

    /// Most items in one batch: 50, what the client sends at most.
    package static let maxItems = 50
    /// Largest body: 64 KiB (50 items take under 8 KiB; the rest is slack for clients, not a target).
    package static let maxBodyBytes = 65_536
    /// Latest `time` accepted: 9999-12-31T23:59:59Z.
    package static let maxTime: Int64 = 253_402_300_799

    package var items: [Item]

    package init(items: [Item]) {
        self.items = items
    }

    /// Reads a body.
    ///
    /// - Throws: ``ParseError`` `.tooLarge` past ``maxBodyBytes``, `.syntax` for bytes that are not
    ///   JSON, `.invalid` for the wrong shape (naming `reports[i].member`).
    package static func parse(_ body: [UInt8]) throws(ParseError) -> HTTPDNSReportBatch {
        guard body.count <= maxBodyBytes else { throw ParseError(.tooLarge, "\(body.count) bytes, at most \(maxBodyBytes)") }
        let document: HTTPDNSJSON
        do {
            var offsets: [Int]?
            document = try HTTPDNSJSON.parseDocument(body, topLevelKeyOffsets: &offsets)
        } catch {
            throw ParseError(.syntax, "\(error.reason) at byte \(error.offset)")
        }
        guard case .object(let root) = document else { throw ParseError(.invalid, "the body is not a JSON object") }
        if let unknown = root.members.first(where: { $0.key != "reports" }) {
            throw ParseError(.invalid, "unknown member \(shown(unknown.key))")
        }
        guard let list = root["reports"]?.arrayValue else { throw ParseError(.invalid, "\"reports\" must be an array") }
        guard !list.isEmpty else { throw ParseError(.invalid, "\"reports\" is empty") }
        guard list.count <= maxItems else { throw ParseError(.invalid, "\(list.count) reports, at most \(maxItems)") }
        var items: [Item] = []
        items.reserveCapacity(list.count)
        for (index, value) in list.enumerated() {
            items.append(try item(value, index: index))
        }
        return HTTPDNSReportBatch(items: items)
    }

    private static let members: Set<String> = ["host", "address", "port", "error", "time"]

    private static func item(_ value: HTTPDNSJSON, index: Int) throws(ParseError) -> Item {
        func fail(_ member: String, _ why: String) -> ParseError {
            ParseError(.invalid, "reports[\(index)]\(member.isEmpty ? "" : ".\(member)") \(why)")
        }
        guard case .object(let object) = value else { throw fail("", "is not an object") }
        if let unknown = object.members.first(where: { !members.contains($0.key) }) {
            throw fail("", "has an unknown member \(shown(unknown.key))")
        }
        guard let rawHost = object["host"]?.stringValue else { throw fail("host", "must be a string") }
        let host = HTTPDNSHostPolicy.normalize(rawHost)
        guard rawHost.utf8.count <= 254, !host.isEmpty, host.utf8.count <= 253, HTTPDNSHostPolicy.isValidHostName(host),
              !HTTPDNSIPAddress.isLiteral(host)
        else {
            throw fail("host", "is not a host name")
        }
        guard let text = object["address"]?.stringValue else { throw fail("address", "must be a string") }
        guard text.utf8.count <= 45, let parsed = HTTPDNSIPAddress(text) else { throw fail("address", "is not an IP address") }
        guard let port = object["port"]?.intValue else { throw fail("port", "must be an integer") }
        guard (1...65_535).contains(port) else { throw fail("port", "is out of range 1-65535") }
        guard let name = object["error"]?.stringValue else { throw fail("error", "must be a string") }
        guard let failure = Failure(rawValue: name) else { throw fail("error", "is not a known error class") }
        guard let time = object["time"]?.intValue else { throw fail("time", "must be an integer") }
        guard time >= 0, Int64(time) <= maxTime else { throw fail("time", "is out of range") }
        return Item(host: host, address: parsed.ipv4Mapped ?? parsed, port: port, error: failure, time: Int64(time))
    }

    /// The batch as the wire contract writes it (what a client sends; tests and the fuzz target
    /// read it back).
    package var json: String {
        String(decoding: HTTPDNSReportWire.body(items), as: UTF8.self)
    }

    /// A key as a reason may show it: quoted, at most 32 printable ASCII characters.
    static func shown(_ key: String) -> String {
        let printable = key.unicodeScalars.prefix(32).map { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7f && $0 != "\"" ? Character($0) : "?" }
        return "\"" + String(printable) + (key.unicodeScalars.count > 32 ? "…" : "") + "\""
    }
}
