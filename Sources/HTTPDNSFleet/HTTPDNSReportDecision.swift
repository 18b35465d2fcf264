import HTTPDNSCore

/// One decision the reports made and the fleet shares (the service's `HTTPDNSReportDecisions`
/// makes them; ``HTTPDNSReportSharing`` writes and reads them in Redis).
package struct HTTPDNSReportDecision: Sendable, Hashable {
    package enum Kind: String, Sendable, Hashable {
        /// Down for all views: the server's own probe failed.
        case down
        /// Last in one view's answers: the probe passed, that view's clients still fail.
        case demoted
    }

    package var kind: Kind
    package var address: HTTPDNSIPAddress
    /// The view demoted in; nil for ``Kind/down``.
    package var view: String?
    /// Distinct networks that had reported it when decided.
    package var networks: Int
    /// The name and port probed.
    package var host: String
    package var port: Int
    package var since: Double
    package var until: Double

    package init(kind: Kind, address: HTTPDNSIPAddress, view: String?, networks: Int, host: String, port: Int, since: Double, until: Double) {
        self.kind = kind
        self.address = address
        self.view = view
        self.networks = networks
        self.host = host
        self.port = port
        self.since = since
        self.until = until
    }
}

/// A reported pair: an address as one view's clients reach it.
package struct HTTPDNSReportKey: Sendable, Hashable {
    package var address: HTTPDNSIPAddress
    package var view: String

    package init(address: HTTPDNSIPAddress, view: String) {
        self.address = address
        self.view = view
    }
}
