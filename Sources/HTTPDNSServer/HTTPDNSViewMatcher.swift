import HTTPDNSCore

/// The views compiled for matching: one longest-prefix table of every view's networks, the
/// country and ASN maps, and the MaxMind DB files open. See ``HTTPDNSViews`` for the rules.
package struct HTTPDNSViewMatcher: Sendable {
    /// The view a client gets.
    package struct Match: Sendable, Hashable {
        /// The view's index in ``HTTPDNSViewMatcher/names`` (the last one is the default view).
        package var index: Int
        /// The prefix length of the network that matched (0 for the default view).
        package var prefixLength: Int
        /// Leading bits of the client's address that decide the view (RFC 7871 §7.2.1 SCOPE
        /// PREFIX-LENGTH): every address sharing them gets the same view. In the family matched
        /// (IPv4 bits for an IPv4-mapped address).
        package var scope: Int
        /// The family matched (IPv4 for an IPv4-mapped address); nil when no address was known.
        package var family: HTTPDNSIPAddress.Family?
    }

    /// How a view claimed a client, in the order that breaks ties of equal length.
    private enum Kind: Int, Comparable {
        case network, asn, country
        static func < (lhs: Kind, rhs: Kind) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    private let table: HTTPDNSPrefixTable<Int32>
    private let countries: [String: Int]
    private let asns: [UInt32: Int]
    private let databases: [HTTPDNSMaxMindDB]
    /// The view names in declaration order, then the default view's.
    package let names: [String]

    /// No views.
    package init() {
        table = HTTPDNSPrefixTable()
        countries = [:]
        asns = [:]
        databases = []
        names = [HTTPDNSViews.defaultName]
    }

    /// Compiles `views` (see ``HTTPDNSViews/init(_:geoIPDatabases:)`` for what is refused).
    package init(_ views: [HTTPDNSViews.View], geoIPDatabases: [String]) throws(HTTPDNSServiceError) {
        guard views.count <= HTTPDNSViews.maxViews else {
            throw HTTPDNSServiceError(.invalidConfiguration, "more than \(HTTPDNSViews.maxViews) views")
        }
        var table = HTTPDNSPrefixTable<Int32>()
        var countries: [String: Int] = [:]
        var asns: [UInt32: Int] = [:]
        var seen = Set<String>()
        for (index, view) in views.enumerated() {
            let shown = HTTPDNSZone.shown(view.name)
            guard HTTPDNSViews.isValidName(view.name) else {
                throw HTTPDNSServiceError(
                    .invalidConfiguration, "view \(shown): a name is 1-63 letters, digits, '-', '_' or '.'")
            }
            guard view.name != HTTPDNSViews.defaultName else {
                throw HTTPDNSServiceError(
                    .invalidConfiguration, "view \(shown): the name is reserved for clients no view claims")
            }
            guard seen.insert(view.name).inserted else {
                throw HTTPDNSServiceError(.invalidConfiguration, "view \(shown): listed twice")
            }
            do throws(HTTPDNSServiceError) {
                for text in view.networks { table.insert(try HTTPDNSNetwork(text), Int32(index)) }
                for path in view.lists {
                    for network in try HTTPDNSNetworkList.read(path: path) { table.insert(network, Int32(index)) }
                }
            } catch {
                throw HTTPDNSServiceError(.invalidConfiguration, "view \(shown): \(error.detail)")
            }
            for code in view.countries {
                let upper = code.uppercased()
                guard upper.utf8.count == 2, upper.utf8.allSatisfy({ $0 >= 0x41 && $0 <= 0x5a }) else {
                    throw HTTPDNSServiceError(
                        .invalidConfiguration, "view \(shown): country \(HTTPDNSZone.shown(code)) is not an ISO 3166-1 two-letter code")
                }
                if countries[upper] == nil { countries[upper] = index }
            }
            for asn in view.asns where asns[asn] == nil { asns[asn] = index }
        }
        if !(countries.isEmpty && asns.isEmpty), geoIPDatabases.isEmpty {
            throw HTTPDNSServiceError(.invalidConfiguration, "views name countries or ASNs but no MaxMind DB file is given")
        }
        var databases: [HTTPDNSMaxMindDB] = []
        for path in geoIPDatabases { databases.append(try HTTPDNSMaxMindDB(path: path)) }
        self.table = table
        self.countries = countries
        self.asns = asns
        // A database no view needs is not consulted: its netmask would only shorten cache scopes.
        self.databases = countries.isEmpty && asns.isEmpty ? [] : databases
        self.names = views.map(\.name) + [HTTPDNSViews.defaultName]
    }

    /// The default view's index.
    package var defaultIndex: Int { names.count - 1 }

    /// Whether there are no views to match.
    package var isEmpty: Bool { names.count == 1 }

    /// Networks in the table, all views together.
    package var networkCount: Int { table.count }

    /// The view of `address` (nil: the default view, scope 0).
    package func match(_ address: HTTPDNSIPAddress?) -> Match {
        guard !isEmpty, let address else { return Match(index: defaultIndex, prefixLength: 0, scope: 0, family: nil) }
        let found = table.lookup(address)
        var best: (length: Int, kind: Kind, index: Int)? = found.value.map { (found.prefixLength, .network, Int($0)) }
        var scope = found.scope
        func consider(_ length: Int, _ kind: Kind, _ index: Int) {
            guard let current = best else { return best = (length, kind, index) }
            if length > current.length || (length == current.length && (kind, index) < (current.kind, current.index)) {
                best = (length, kind, index)
            }
        }
        for database in databases {
            // A database that fails here was checked when loaded; a fault deep in it counts as no record.
            guard let record = try? database.lookup(address) else { continue }
            // The database's answer is the same across the record's network, no further.
            scope = max(scope, record.prefixLength)
            guard record.found else { continue }
            if let asn = record.asn, let index = asns[asn] { consider(record.prefixLength, .asn, index) }
            if let country = record.country, let index = countries[country] { consider(record.prefixLength, .country, index) }
        }
        guard let best else { return Match(index: defaultIndex, prefixLength: 0, scope: scope, family: found.family) }
        return Match(index: best.index, prefixLength: best.length, scope: scope, family: found.family)
    }
}
