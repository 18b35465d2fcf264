import HTTPDNSCore

/// The zone file read strictly, with positions: an object of objects whose members are `A`, `AAAA`
/// (arrays of address strings), `CNAME` (a string), `ttl` (an integer) and `check` (an object, see
/// ``HTTPDNSHealthCheck``), in any case.
///
/// Read with the project's own JSON reader rather than `JSONSerialization`, which keeps one of two
/// duplicate keys silently and reports no position: every error here names the file and the
/// `line:column` of the fault (of the name's key for a problem with an entry).
package struct HTTPDNSZoneFile {
    /// One name of the file, as written, with its entry and where its key starts.
    struct Item {
        var name: String
        var entry: HTTPDNSZone.Entry
        /// Byte offset of the name's key, or `nil` for entries not read from a file.
        var offset: Int?
    }

    /// The file's bytes, for turning offsets into positions.
    let bytes: [UInt8]
    /// How the file is named in errors (its path, or `zone` for bytes given directly).
    let source: String

    /// Reads the file's names in document order.
    ///
    /// - Throws: ``HTTPDNSServiceError`` `.invalidZone` with `source:line:column:`: not JSON
    ///   (including a duplicate key), not an object of objects, a bad address or TTL, an unknown
    ///   member, or more than ``HTTPDNSZone/maxNames`` names.
    func items(defaultTTL: Int) throws(HTTPDNSServiceError) -> [Item] {
        var offsets: [Int]? = []
        let document: HTTPDNSJSON
        do {
            document = try HTTPDNSJSON.parseDocument(bytes, topLevelKeyOffsets: &offsets)
        } catch {
            throw failure(at: error.offset, "not valid JSON: \(error.reason)")
        }
        guard case .object(let names) = document else {
            throw failure(at: firstNonBlank, "wrong type: the zone is an object of names")
        }
        guard names.members.count <= HTTPDNSZone.maxNames else {
            throw failure(at: 0, "more than \(HTTPDNSZone.maxNames) names")
        }
        var items: [Item] = []
        items.reserveCapacity(names.members.count)
        for (index, member) in names.members.enumerated() {
            let offset = offsets?[index] ?? 0
            let entry = try self.entry(member.value, name: member.key, offset: offset, defaultTTL: defaultTTL)
            items.append(Item(name: member.key, entry: entry, offset: offset))
        }
        return items
    }

    private func entry(
        _ value: HTTPDNSJSON, name: String, offset: Int, defaultTTL: Int, inView: Bool = false
    ) throws(HTTPDNSServiceError) -> HTTPDNSZone.Entry {
        let shown = HTTPDNSZone.shown(name)
        guard case .object(let members) = value else {
            throw failure(at: offset, "\(shown): wrong type (names map to objects)")
        }
        var entry = HTTPDNSZone.Entry(ttl: defaultTTL)
        var seen = Set<String>()
        for member in members.members {
            let key = member.key.lowercased()
            guard seen.insert(key).inserted else {
                throw failure(at: offset, "\(shown): member \(HTTPDNSZone.shown(member.key)) listed twice (members are case-insensitive)")
            }
            switch key {
            case "a":
                entry.ipv4 = try addresses(member.value, name: name, offset: offset, family: .v4)
            case "aaaa":
                entry.ipv6 = try addresses(member.value, name: name, offset: offset, family: .v6)
            case "views" where !inView:
                guard case .object(let views) = member.value else {
                    throw failure(at: offset, "\(shown): wrong type (views is an object of view names)")
                }
                var seenViews = Set<String>()
                for view in views.members {
                    guard seenViews.insert(view.key).inserted else {
                        throw failure(at: offset, "\(shown): view \(HTTPDNSZone.shown(view.key)) listed twice")
                    }
                    entry.views[view.key] = try self.entry(
                        view.value, name: "\(name) (view \(view.key))", offset: offset, defaultTTL: -1, inView: true)
                }
            case "cname" where !inView:
                guard let target = member.value.stringValue else {
                    throw failure(at: offset, "\(shown): wrong type (CNAME is a string)")
                }
                entry.cname = target
            case "ttl":
                guard case .number = member.value else {
                    throw failure(at: offset, "\(shown): wrong type (ttl is an integer)")
                }
                guard let ttl = member.value.intValue, (0...HTTPDNSFormatLimits.maxTTL).contains(ttl) else {
                    throw failure(at: offset, "\(shown): ttl must be an integer 0...\(HTTPDNSFormatLimits.maxTTL)")
                }
                entry.ttl = ttl
            case "check":
                entry.check = try check(member.value, name: name, offset: offset)
            default:
                let expected = inView ? "A, AAAA, ttl" : "A, AAAA, CNAME, ttl, check, views"
                throw failure(at: offset, "\(shown): unknown member \(HTTPDNSZone.shown(member.key)) (expected \(expected))")
            }
        }
        if !inView {
            // A view's entry without `ttl` inherits the name's.
            for (view, viewEntry) in entry.views where viewEntry.ttl < 0 { entry.views[view]?.ttl = entry.ttl }
        }
        return entry
    }

    private func addresses(
        _ value: HTTPDNSJSON, name: String, offset: Int, family: HTTPDNSIPAddress.Family
    ) throws(HTTPDNSServiceError) -> [HTTPDNSIPAddress] {
        let shown = HTTPDNSZone.shown(name)
        guard let items = value.arrayValue else {
            throw failure(at: offset, "\(shown): wrong type (A and AAAA are arrays of address strings)")
        }
        guard items.count <= HTTPDNSFormatLimits.maxAddressesPerName else {
            throw failure(at: offset, "\(shown): more than \(HTTPDNSFormatLimits.maxAddressesPerName) addresses")
        }
        var out: [HTTPDNSIPAddress] = []
        for item in items {
            guard let text = item.stringValue else {
                throw failure(at: offset, "\(shown): wrong type (A and AAAA are arrays of address strings)")
            }
            guard text.utf8.count <= 64, let address = HTTPDNSIPAddress(text), address.family == family else {
                let kind = family == .v4 ? "an IPv4" : "an IPv6"
                throw failure(at: offset, "\(shown): \(HTTPDNSZone.shown(text)) is not \(kind) address")
            }
            out.append(address)
        }
        return out
    }

    /// The offset of the first byte that is not JSON whitespace (where a wrong top-level value starts).
    private var firstNonBlank: Int {
        bytes.firstIndex { !($0 == 0x20 || $0 == 0x09 || $0 == 0x0a || $0 == 0x0d) } ?? bytes.count
    }

    /// An `.invalidZone` error prefixed with `source:line:column:` of `offset`.
    func failure(at offset: Int?, _ detail: String) -> HTTPDNSServiceError {
        guard let offset else { return HTTPDNSServiceError(.invalidZone, "\(source): \(detail)") }
        let (line, column) = Self.position(of: offset, in: bytes)
        return HTTPDNSServiceError(.invalidZone, "\(source):\(line):\(column): \(detail)")
    }

    /// The 1-based line and column of byte `offset`: lines end at LF (a CR before it counts as part
    /// of the line), columns count Unicode scalars (UTF-8 continuation bytes are not counted), as
    /// editors and compilers show them.
    package static func position(of offset: Int, in bytes: [UInt8]) -> (line: Int, column: Int) {
        var line = 1
        var column = 1
        for byte in bytes[..<min(max(0, offset), bytes.count)] {
            if byte == 0x0a {
                line += 1
                column = 1
            } else if byte & 0xc0 != 0x80 {
                column += 1
            }
        }
        return (line, column)
    }
}
