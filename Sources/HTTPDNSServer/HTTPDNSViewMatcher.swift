import HTTPDNSCore
@_spi(HTTPDNSPackage) import HTTPDNSOperations

/// The views compiled for matching: one longest-prefix table of every view's networks and of every
/// MaxMind DB network whose country or ASN a view names. See ``HTTPDNSViews`` for the rules.
///
/// The databases are read whole when the views are made (their search trees walked, each record
/// decoded once) and not consulted per query: a query costs one walk of the table, however many
/// databases the views use. Two libmaxminddb lookups per query (tree walk and record decoding) were
/// ~0.7 µs, 7 % of a DoH query's CPU in `httpdns serve` (bench row 10).
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
    private enum Kind: Int, Comparable, Sendable {
        case network, asn, country
        static func < (lhs: Kind, rhs: Kind) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// Each network's claim: its kind and view, the lower winning a tie of equal length.
    private struct Claim: Sendable, Comparable {
        var kind: Kind
        var index: Int32
        static func < (lhs: Claim, rhs: Claim) -> Bool { (lhs.kind, lhs.index) < (rhs.kind, rhs.index) }
    }

    private let table: HTTPDNSPrefixTable<Claim>
    /// The view names in declaration order, then the default view's.
    package let names: [String]

    /// No views.
    package init() {
        table = HTTPDNSPrefixTable()
        names = [HTTPDNSViews.defaultName]
    }

    /// Compiles `views` (see ``HTTPDNSViews/init(_:geoIPDatabases:)`` for what is refused).
    package init(_ views: [HTTPDNSViews.View], geoIPDatabases: [String]) throws(HTTPDNSServiceError) {
        guard views.count <= HTTPDNSViews.maxViews else {
            throw HTTPDNSServiceError(.invalidConfiguration, "more than \(HTTPDNSViews.maxViews) views")
        }
        var table = HTTPDNSPrefixTable<Claim>()
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
                let claim = Claim(kind: .network, index: Int32(index))
                for text in view.networks { table.insert(try HTTPDNSNetwork(text), claim, replaces: <) }
                for path in view.lists {
                    for network in try HTTPDNSNetworkList.read(path: path) { table.insert(network, claim, replaces: <) }
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
        for path in geoIPDatabases {
            let database = try HTTPDNSMaxMindDB(path: path)
            // A database no view needs is only checked.
            guard !(countries.isEmpty && asns.isEmpty) else { continue }
            try database.forEachNetwork { network, country, asn in
                if let asn, let index = asns[asn] { table.insert(network, Claim(kind: .asn, index: Int32(index)), replaces: <) }
                if let country, let index = countries[country] { table.insert(network, Claim(kind: .country, index: Int32(index)), replaces: <) }
            }
        }
        self.table = table
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
        guard let claim = found.value else { return Match(index: defaultIndex, prefixLength: 0, scope: found.scope, family: found.family) }
        return Match(index: Int(claim.index), prefixLength: found.prefixLength, scope: found.scope, family: found.family)
    }
}
