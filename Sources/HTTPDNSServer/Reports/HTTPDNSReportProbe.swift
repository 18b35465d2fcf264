import HTTPDNSCore

/// Checks from the server's own network whether an origin answers: the seam through which
/// reports are confirmed before an address is taken out for everyone.
///
/// The origin health checks plug in here (TCP connect, TLS with SNI = `host` and the certificate
/// verified); tests pass stand-ins. An implementation bounds its own time; the service still gives
/// up after ``HTTPDNSService/Reports/probeTimeout`` and counts that as unreachable.
package protocol HTTPDNSReportProbe: Sendable {
    /// True when `address`:`port` answers for `host`.
    func probe(address: HTTPDNSIPAddress, port: Int, host: String) async -> Bool
}

/// A probe made of a closure.
package struct HTTPDNSReportClosureProbe: HTTPDNSReportProbe {
    private let body: @Sendable (HTTPDNSIPAddress, Int, String) async -> Bool

    package init(_ body: @escaping @Sendable (HTTPDNSIPAddress, Int, String) async -> Bool) {
        self.body = body
    }

    package func probe(address: HTTPDNSIPAddress, port: Int, host: String) async -> Bool {
        await body(address, port, host)
    }
}
