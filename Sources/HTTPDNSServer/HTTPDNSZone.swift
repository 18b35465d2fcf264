import Foundation
@_spi(HTTPDNSPackage) import HTTPDNSCore

/// The names the service answers itself, with their addresses: the "your own server hands out the
/// IPs" option.
///
/// The zone file is JSON, one member per name:
/// `{"www.example.test": {"A": ["192.0.2.1"], "AAAA": ["2001:db8::1"], "ttl": 60},
///   "*.example.test": {"A": ["192.0.2.9"]}, "alias.example.test": {"CNAME": "www.example.test"}}`.
/// Names are case-insensitive with an optional trailing dot; member names inside an entry are
/// case-insensitive too, and unknown members are an error so that a typo cannot silently drop data.
///
/// A `*.` name is a wildcard in the sense of RFC 4592: it answers for names below its base that
/// have no entry of their own, the closest wildcard winning, and it stops at a name that exists.
/// Every entry's parent (the base of a wildcard) is taken as a zone apex: names there with no
/// entry exist without data (NODATA), and negative answers carry an SOA named after it.
public struct HTTPDNSZone: Sendable, Hashable {
    /// What one name answers.
    public struct Entry: Sendable, Hashable {
        /// IPv4 addresses, in the order given.
        public var ipv4: [HTTPDNSIPAddress]
        /// IPv6 addresses, in the order given.
        public var ipv6: [HTTPDNSIPAddress]
        /// The name this one is an alias for (normalised); an alias has no addresses of its own.
        public var cname: String?
        /// Seconds the answer may be cached.
        public var ttl: Int
        /// How the addresses are health-checked (the zone file's `"check"`); nil: never, they are
        /// always answered. Default nil.
        public var check: HTTPDNSHealthCheck?
        /// Other records for clients of a view (``HTTPDNSViews``), by view name: a view's entry
        /// replaces the A and AAAA sets and the TTL for that view's clients (the zone file's `ttl`
        /// is inherited when the view gives none). Default none: every client gets this entry.
        public var views: [String: Entry] = [:]

        public init(
            ipv4: [HTTPDNSIPAddress] = [], ipv6: [HTTPDNSIPAddress] = [], cname: String? = nil, ttl: Int = 300,
            check: HTTPDNSHealthCheck? = nil
        ) {
            self.ipv4 = ipv4
            self.ipv6 = ipv6
            self.cname = cname
            self.ttl = ttl
            self.check = check
        }

        /// The entry the clients of view `name` get (this one when the view has none of its own).
        package func forView(_ name: String) -> Entry {
            views.isEmpty ? self : views[name] ?? self
        }
    }

    /// The entry a name found, and under which key (the name itself or a wildcard).
    package struct Match: Sendable, Hashable {
        /// The zone key that matched (`www.example.test` or `*.example.test`).
        package var key: String
        /// Its entry.
        package var entry: Entry
    }

    /// Most names in one zone; a larger file is refused rather than slowly loaded.
    package static let maxNames = 100_000
    /// Largest zone file read.
    package static let maxFileBytes = 16 << 20
    /// TTL used for entries without `ttl`, unless the loader is given another. 300 s.
    public static let defaultTTL = 300
    /// Most CNAME links one name may follow inside the zone: 8, the service's default
    /// ``HTTPDNSService/Limits/maxCNAMEChain``. A longer chain (or a loop) is refused at load rather
    /// than answered `SERVFAIL` at query time.
    package static let maxCNAMEChain = 8

    /// The entries by normalised name (lower case, no trailing dot; wildcards keep their `*.`).
    public let entries: [String: Entry]
    /// The zone apexes (see the type's documentation).
    package let apexes: Set<String>

    /// An empty zone: every name goes upstream, or is NXDOMAIN without upstreams.
    public init() {
        self.entries = [:]
        self.apexes = []
    }

    /// A zone from entries; names are checked and normalised.
    ///
    /// - Throws: ``HTTPDNSServiceError`` `.invalidZone` naming the first bad name or entry, two
    ///   names that differ only in case, or a CNAME loop or chain (see `maxCNAMEChain` (8)).
    public init(entries: [String: Entry]) throws(HTTPDNSServiceError) {
        guard entries.count <= Self.maxNames else {
            throw HTTPDNSServiceError(.invalidZone, "more than \(Self.maxNames) names")
        }
        // Sorted so that the error for a bad zone is the same on every run.
        let items = entries.sorted { $0.key < $1.key }.map { HTTPDNSZoneFile.Item(name: $0.key, entry: $0.value, offset: nil) }
        try self.init(items: items, file: HTTPDNSZoneFile(bytes: [], source: "zone"))
    }

    /// Parses zone file JSON.
    ///
    /// - Parameters:
    ///   - json: the file's bytes, at most `maxFileBytes` (16 MiB).
    ///   - defaultTTL: TTL of entries without `ttl`. Default ``defaultTTL``.
    ///   - source: how errors name the file. Default `zone`.
    /// - Throws: ``HTTPDNSServiceError`` `.invalidZone`, its detail starting `source:line:column:`:
    ///   not JSON (duplicate keys included), not an object of objects, a bad name, address, TTL or
    ///   CNAME, an unknown member, names that differ only in case, a CNAME loop or a chain longer than
    ///   `maxCNAMEChain` (8).
    public init(json: Data, defaultTTL: Int = HTTPDNSZone.defaultTTL, source: String = "zone") throws(HTTPDNSServiceError) {
        guard json.count <= Self.maxFileBytes else {
            throw HTTPDNSServiceError(.invalidZone, "\(source): zone file larger than \(Self.maxFileBytes) bytes")
        }
        let file = HTTPDNSZoneFile(bytes: [UInt8](json), source: source)
        try self.init(items: try file.items(defaultTTL: defaultTTL), file: file)
    }

    /// Reads and parses a zone file (see ``init(json:defaultTTL:source:)``); errors name `path`.
    public init(contentsOfFile path: String, defaultTTL: Int = HTTPDNSZone.defaultTTL) throws(HTTPDNSServiceError) {
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        if let size = attributes?[.size] as? Int, size > Self.maxFileBytes {
            throw HTTPDNSServiceError(.invalidZone, "\(path): zone file larger than \(Self.maxFileBytes) bytes")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw HTTPDNSServiceError(.invalidZone, "cannot read zone file \(path)")
        }
        try self.init(json: data, defaultTTL: defaultTTL, source: path)
    }

    /// Checks and normalises `items`, naming the item's position in `file` in errors.
    private init(items: [HTTPDNSZoneFile.Item], file: HTTPDNSZoneFile) throws(HTTPDNSServiceError) {
        var normalised: [String: Entry] = [:]
        var firstOffset: [String: Int?] = [:]
        var apexes = Set<String>()
        for item in items {
            let name: String
            let entry: Entry
            do {
                name = try Self.checkedName(item.name)
                entry = try Self.checkedEntry(item.entry, name: name)
            } catch {
                throw file.failure(at: item.offset, error.detail)
            }
            if let earlier = firstOffset[name] {
                let first = earlier.map { offset in
                    let (line, column) = HTTPDNSZoneFile.position(of: offset, in: file.bytes)
                    return " (first at \(line):\(column))"
                } ?? ""
                throw file.failure(
                    at: item.offset, "\(Self.shown(item.name)): name listed twice\(first); names are case-insensitive")
            }
            firstOffset[name] = item.offset
            normalised[name] = entry
            apexes.insert(Self.apex(of: name))
        }
        self.entries = normalised
        self.apexes = apexes
        if let (name, detail) = chainFault() { throw file.failure(at: firstOffset[name] ?? nil, detail) }
        if let (name, detail) = checkFault() { throw file.failure(at: firstOffset[name] ?? nil, detail) }
    }

    /// Two names that probe one address alike (same kind, port, path and class) with different
    /// timings: one probe serves every name of an address and check, so they must agree.
    private func checkFault() -> (name: String, detail: String)? {
        var seen: [String: (name: String, check: HTTPDNSHealthCheck)] = [:]
        for (name, entry) in entries.sorted(by: { $0.key < $1.key }) {
            guard let check = entry.check else { continue }
            for address in entry.ipv4 + entry.ipv6 {
                let key = "\(address) \(check.label)"
                if let earlier = seen[key], earlier.check != check {
                    return (name, "\(name): checks \(address) (\(check.label)) with other settings than \(earlier.name); names that share an address and check must agree")
                }
                seen[key] = (name, check)
            }
        }
        return nil
    }

    /// The entry for `host` (normalised), exact name first, then the closest wildcard.
    package func match(_ host: String) -> Match? {
        let name = HTTPDNSHostPolicy.normalize(host)
        if let entry = entries[name] { return Match(key: name, entry: entry) }
        var labels = name.split(separator: ".", omittingEmptySubsequences: false)
        while labels.count > 1 {
            labels.removeFirst()
            let base = labels.joined(separator: ".")
            if let entry = entries["*." + base] { return Match(key: "*." + base, entry: entry) }
            // RFC 4592 §3.3.1: a wildcard does not reach past a name that exists.
            if entries[base] != nil { return nil }
        }
        return nil
    }

    /// The longest apex `host` is at or below, for the SOA of negative answers.
    package func apex(for host: String) -> String? {
        let name = HTTPDNSHostPolicy.normalize(host)
        var best: String?
        for apex in apexes where name == apex || name.hasSuffix("." + apex) {
            if apex.count > (best?.count ?? -1) { best = apex }
        }
        return best
    }

    /// Whether `host` exists in the zone without an entry of its own (an apex): NODATA, not NXDOMAIN.
    package func isApex(_ host: String) -> Bool {
        apexes.contains(HTTPDNSHostPolicy.normalize(host))
    }

    static func apex(of name: String) -> String {
        let base = name.hasPrefix("*.") ? String(name.dropFirst(2)) : name
        guard !name.hasPrefix("*."), let dot = base.firstIndex(of: ".") else { return base }
        return String(base[base.index(after: dot)...])
    }

    static func checkedName(_ raw: String) throws(HTTPDNSServiceError) -> String {
        let name = HTTPDNSHostPolicy.normalize(raw)
        let base = name.hasPrefix("*.") ? String(name.dropFirst(2)) : name
        guard !HTTPDNSIPAddress.isLiteral(base), HTTPDNSHostPolicy.isValidHostName(base), name.utf8.count <= 253 else {
            throw HTTPDNSServiceError(.invalidZone, "\(shown(raw)): not a valid host name")
        }
        return name
    }

    static func checkedEntry(_ entry: Entry, name: String) throws(HTTPDNSServiceError) -> Entry {
        var entry = entry
        guard (0...HTTPDNSFormatLimits.maxTTL).contains(entry.ttl) else {
            throw HTTPDNSServiceError(.invalidZone, "\(name): ttl must be 0...\(HTTPDNSFormatLimits.maxTTL)")
        }
        guard entry.ipv4.allSatisfy({ $0.family == .v4 }), entry.ipv6.allSatisfy({ $0.family == .v6 }) else {
            throw HTTPDNSServiceError(.invalidZone, "\(name): A needs IPv4 and AAAA IPv6 addresses")
        }
        guard entry.ipv4.count <= HTTPDNSFormatLimits.maxAddressesPerName,
              entry.ipv6.count <= HTTPDNSFormatLimits.maxAddressesPerName
        else {
            throw HTTPDNSServiceError(.invalidZone, "\(name): more than \(HTTPDNSFormatLimits.maxAddressesPerName) addresses")
        }
        if let target = entry.cname {
            let normalised = HTTPDNSHostPolicy.normalize(target)
            guard HTTPDNSHostPolicy.isValidHostName(normalised), !HTTPDNSIPAddress.isLiteral(normalised) else {
                throw HTTPDNSServiceError(.invalidZone, "\(name): CNAME \(shown(target)) is not a host name")
            }
            // RFC 1034 §3.6.2: an alias has no other data.
            guard entry.ipv4.isEmpty, entry.ipv6.isEmpty else {
                throw HTTPDNSServiceError(.invalidZone, "\(name): CNAME cannot have addresses too")
            }
            guard normalised != name else { throw HTTPDNSServiceError(.invalidZone, "\(name): CNAME to itself") }
            guard entry.views.isEmpty else {
                throw HTTPDNSServiceError(.invalidZone, "\(name): a CNAME is the same for every view (views give A, AAAA and ttl)")
            }
            entry.cname = normalised
        }
        if let check = entry.check {
            do {
                try check.validate()
            } catch {
                throw HTTPDNSServiceError(.invalidZone, "\(name): \(error.detail)")
            }
            guard entry.cname == nil else { throw HTTPDNSServiceError(.invalidZone, "\(name): CNAME cannot have a check") }
            guard !entry.ipv4.isEmpty || !entry.ipv6.isEmpty else {
                throw HTTPDNSServiceError(.invalidZone, "\(name): a check needs addresses to check")
            }
            // A tls, http or https probe sends the name (SNI, Host); a wildcard is no name to send.
            guard !name.hasPrefix("*.") || !check.kind.needsName else {
                throw HTTPDNSServiceError(.invalidZone, "\(name): a wildcard entry can only have a tcp check (no name to verify or send)")
            }
        }
        for (view, viewEntry) in entry.views {
            guard HTTPDNSViews.isValidName(view), view != HTTPDNSViews.defaultName else {
                throw HTTPDNSServiceError(.invalidZone, "\(name): \(shown(view)) is not a view name")
            }
            guard viewEntry.cname == nil, viewEntry.views.isEmpty, viewEntry.check == nil else {
                throw HTTPDNSServiceError(.invalidZone, "\(name): view \(view) may give A, AAAA and ttl only")
            }
            entry.views[view] = try checkedEntry(viewEntry, name: "\(name) (view \(view))")
        }
        return entry
    }

    /// A name as it may appear in a message: bounded and printable.
    static func shown(_ raw: String) -> String {
        HTTPDNSASCII.quoted(raw)
    }
}
