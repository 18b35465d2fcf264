import HTTPDNSCore

/// How the addresses of one zone entry are checked (its `"check"` member in the zone file).
///
/// `{"type": "https", "port": 443, "path": "/health", "expect": "2xx", "interval": 5, "timeout": 2,
/// "rise": 2, "fall": 3, "jitter": 0.1}`: every member but `type` may be left out (defaults below).
/// Each address of the entry is probed on its own; an address that fails ``fall`` probes in a row
/// leaves the answers, and comes back after ``rise`` good probes in a row. Addresses start up: an
/// origin not yet probed is answered as it would be without a check.
///
/// One probe per address and check, however many names share them. A `tls` or `https` check verifies
/// the certificate for a name that uses the address with this check: the first such name in sorted
/// order (which is why wildcard entries can only have `tcp` checks: `*.example.test` is no name to
/// verify or to send as `Host`).
public struct HTTPDNSHealthCheck: Sendable, Hashable {
    /// What a probe does.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// A TCP connection is made (and closed at once).
        case tcp
        /// A TLS handshake with SNI = the name, the certificate verified for the name against the
        /// service's trusted CAs (``HTTPDNSService/Health/trust``); no HTTP request is sent.
        case tls
        /// An HTTP/1.1 `GET` of ``path`` with `Host` = the name; the status must be in ``expect``.
        case http
        /// As ``http``, over TLS verified as for ``tls``.
        case https
    }

    /// What the probe does. Required in the zone file.
    public var kind: Kind
    /// The port probed. Default 443 for `tls` and `https`, 80 for `tcp` and `http`.
    public var port: Int
    /// The request path of `http` and `https` checks: starts with `/`, at most 1,024 bytes of
    /// printable ASCII without spaces, `"`, `\` or `#`. Default `/`.
    public var path: String = "/"
    /// The class of statuses that counts as up for `http` and `https`: 2 for `2xx` (2...5). Default 2.
    public var expect: Int = 2
    /// Time between the end of one probe and the start of the next (0.1 s to 1 hour). Default 5 s.
    public var interval: Duration = .seconds(5)
    /// How long one probe may take, connection and answer included (0.05 s to 60 s). Default 2 s.
    public var timeout: Duration = .seconds(2)
    /// Good probes in a row that bring a down address back (1...100). Default 2.
    public var rise: Int = 2
    /// Failed probes in a row that take an address out (1...100). Default 3.
    public var fall: Int = 3
    /// Each interval is stretched or shortened by up to this fraction, at random (0...0.5), so that
    /// probes of many addresses spread out instead of running in step. Default 0.1.
    public var jitter: Double = 0.1

    /// Valid ranges, as the zone file refuses values outside them.
    package static let intervalRange: ClosedRange<Duration> = .milliseconds(100)...(.seconds(3_600))
    package static let timeoutRange: ClosedRange<Duration> = .milliseconds(50)...(.seconds(60))
    package static let countRange: ClosedRange<Int> = 1...100
    package static let jitterRange: ClosedRange<Double> = 0...0.5
    package static let maxPathBytes = 1_024

    /// A check of `kind` on `port` (nil: the kind's default port), every other setting at its default.
    public init(_ kind: Kind, port: Int? = nil) {
        self.kind = kind
        self.port = port ?? Self.defaultPort(kind)
    }

    /// 443 for the kinds that speak TLS, else 80.
    public static func defaultPort(_ kind: Kind) -> Int {
        kind.usesTLS ? 443 : 80
    }

    /// How metrics and the status endpoint name the check: what the probe does, `tcp:443`,
    /// `https:443/health`, `http:80/ 3xx` (the class when not 2xx). One address has at most one
    /// check of each label: the zone refuses names that probe it alike with different timings.
    public var label: String {
        guard kind.sendsRequest else { return "\(kind.rawValue):\(port)" }
        return expect == 2 ? "\(kind.rawValue):\(port)\(path)" : "\(kind.rawValue):\(port)\(path) \(expect)xx"
    }

    /// Checks every setting against its range.
    ///
    /// - Throws: ``HTTPDNSServiceError`` `.invalidZone` naming the first setting out of range.
    package func validate() throws(HTTPDNSServiceError) {
        func fail(_ detail: String) -> HTTPDNSServiceError { HTTPDNSServiceError(.invalidZone, "check: \(detail)") }
        guard (1...65_535).contains(port) else { throw fail("port must be 1...65535") }
        guard Self.intervalRange.contains(interval) else { throw fail("interval must be 0.1...3600 seconds") }
        guard Self.timeoutRange.contains(timeout) else { throw fail("timeout must be 0.05...60 seconds") }
        guard Self.countRange.contains(rise), Self.countRange.contains(fall) else { throw fail("rise and fall must be 1...100") }
        guard jitter.isFinite, Self.jitterRange.contains(jitter) else { throw fail("jitter must be 0...0.5") }
        guard (2...5).contains(expect) else { throw fail("expect must be 2xx, 3xx, 4xx or 5xx") }
        guard Self.isValidPath(path) else {
            throw fail("path must start with / and hold at most \(Self.maxPathBytes) printable ASCII bytes without spaces, \", \\ or #")
        }
        if !kind.sendsRequest, path != "/" || expect != 2 {
            throw fail("path and expect belong to http and https checks")
        }
    }

    /// Whether `path` may be sent as a request target and shown as a metrics label unescaped.
    static func isValidPath(_ path: String) -> Bool {
        let bytes = Array(path.utf8)
        guard bytes.first == UInt8(ascii: "/"), bytes.count <= maxPathBytes else { return false }
        return bytes.allSatisfy { byte in
            byte > 0x20 && byte < 0x7f && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\") && byte != UInt8(ascii: "#")
        }
    }
}

extension HTTPDNSHealthCheck.Kind {
    /// Whether the probe speaks TLS (and so verifies a certificate for a name).
    package var usesTLS: Bool { self == .tls || self == .https }
    /// Whether the probe sends an HTTP request.
    package var sendsRequest: Bool { self == .http || self == .https }
    /// Whether the probe needs a host name (SNI or `Host`): every kind but `tcp`.
    package var needsName: Bool { self != .tcp }
}
