import HTTPDNSCore

/// Views: answers by client network. Each view names client networks (CIDR networks given inline
/// or in list files), countries and autonomous systems (looked up in MaxMind DB files); a zone entry
/// may give each view records of its own (``HTTPDNSZone/Entry/views``). A client no view claims gets
/// the default view, named ``defaultName``, which answers the entry's own records.
///
/// **The most specific match wins**: among every view that claims the client, the one whose
/// network is longest (a country's or an ASN's network is the MaxMind record's: its netmask); at equal
/// length a CIDR network before an ASN before a country, then the view declared first.
///
/// Everything is read and checked when the value is made (list files, databases), so that a value
/// either works whole or was refused with its reason; ``HTTPDNSService/reload(zone:views:)`` swaps
/// it in at once.
///
/// ```swift
/// var carrier = HTTPDNSViews.View(name: "carrier-a")
/// carrier.networks = ["10.1.0.0/16"]
/// carrier.lists = ["/etc/httpdns/carrier-a.txt"]
/// configuration.views = try HTTPDNSViews([carrier])
/// ```
public struct HTTPDNSViews: Sendable {
    /// One view: a name and the clients it claims.
    public struct View: Sendable, Hashable {
        /// The name zone entries use (letters, digits, `-`, `_`, `.`; at most 63 bytes; not `default`).
        public var name: String
        /// CIDR networks (`10.1.0.0/16`, `2001:db8::/32`, bare addresses). Default none.
        public var networks: [String] = []
        /// Files of one CIDR network a line (`#` comments), read when the views are made. Default none.
        public var lists: [String] = []
        /// ISO 3166-1 country codes (`CN`), matched by the MaxMind DB's `country.iso_code`. Default none.
        public var countries: [String] = []
        /// Autonomous system numbers, matched by the MaxMind DB's `autonomous_system_number`. Default none.
        public var asns: [UInt32] = []

        /// The view's own zone transfers (issue 24), for `httpdns serve --secondary`: nil, none.
        package var transfer: Transfer?

        public init(name: String) {
            self.name = name
        }
    }

    /// A view taking its records from transfers of its own, as BIND serves a view to the secondaries
    /// that sign with that view's key (`match-clients { key …; }`): every `--secondary` zone is
    /// also transferred with ``tsigKeyFile``'s key, from ``primaries`` (or the zone's own), and
    /// that transfer is the view's whole zone.
    package struct Transfer: Sendable, Hashable {
        /// A BIND key file (as `--tsig-file`) with the view's key.
        package var tsigKeyFile: String
        /// The primaries (`IP`, `IP:PORT`, `[IPv6]:PORT`); empty: each zone's own.
        package var primaries: [String] = []

        package init(tsigKeyFile: String, primaries: [String] = []) {
            self.tsigKeyFile = tsigKeyFile
            self.primaries = primaries
        }
    }

    /// The name of the view answering clients no other view claims: `default`.
    public static let defaultName = "default"
    /// Most views (bounding the `/metrics` series they add): 256.
    public static let maxViews = 256

    /// The views, in declaration order.
    public let views: [View]
    /// The MaxMind DB files consulted for countries and ASNs, in order.
    public let geoIPDatabases: [String]
    /// The compiled matcher.
    package let matcher: HTTPDNSViewMatcher

    /// No views: every client gets the default view.
    public init() {
        views = []
        geoIPDatabases = []
        matcher = HTTPDNSViewMatcher()
    }

    /// Checks the views and reads every list file and MaxMind DB they need.
    ///
    /// - Parameters:
    ///   - views: the views, most important first (declaration order breaks ties).
    ///   - geoIPDatabases: MaxMind DB files (a country database and an ASN database are usually two
    ///     files); needed when a view names countries or ASNs. Default none.
    /// - Throws: ``HTTPDNSServiceError`` `.invalidConfiguration` naming what is wrong: a bad or
    ///   repeated view name, a bad network (`network "…": reason`), a list line (`file:line: reason`),
    ///   a database that cannot be read, a bad country code, or countries and ASNs without a database.
    public init(_ views: [View], geoIPDatabases: [String] = []) throws(HTTPDNSServiceError) {
        self.views = views
        self.geoIPDatabases = geoIPDatabases
        matcher = try HTTPDNSViewMatcher(views, geoIPDatabases: geoIPDatabases)
    }

    /// Whether there are no views (every client gets the default view).
    public var isEmpty: Bool { views.isEmpty }

    /// The view names, in declaration order, then ``defaultName``.
    public var names: [String] { views.map(\.name) + [Self.defaultName] }

    /// Checks that every view `zone` names is one of these.
    ///
    /// - Throws: ``HTTPDNSServiceError`` `.invalidZone` naming the zone entry and the view.
    public func check(_ zone: HTTPDNSZone) throws(HTTPDNSServiceError) {
        let known = Set(views.map(\.name))
        for name in zone.entries.keys.sorted() {
            guard let entry = zone.entries[name], !entry.views.isEmpty else { continue }
            for view in entry.views.keys.sorted() where !known.contains(view) {
                let defined = views.isEmpty ? "no views are configured" : "defined: " + views.map(\.name).joined(separator: ", ")
                throw HTTPDNSServiceError(.invalidZone, "\(HTTPDNSZone.shown(name)): view \(HTTPDNSZone.shown(view)) is not defined (\(defined))")
            }
        }
    }

    /// Whether `name` may name a view: 1-63 bytes of ASCII letters, digits, `-`, `_` and `.` (it
    /// becomes a `/metrics` label value and an access-log field as written).
    package static func isValidName(_ name: String) -> Bool {
        let bytes = name.utf8
        return (1...63).contains(bytes.count) && bytes.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7a) || byte == 0x2d || byte == 0x5f
                || byte == 0x2e
        }
    }
}
