import DNSWire
import DNSZoneTransfer

/// The service as the zone followers see it (issue 31): ``HTTPDNSSecondaryZones`` hands it the
/// zones transferred and what to count, and never names the service itself, so that this module
/// sits under it. `HTTPDNSService` conforms (in HTTPDNSServer).
package protocol HTTPDNSZoneSink: AnyObject, Sendable {
    /// What the transferred zones are combined with: the service's own zone, whose checks and
    /// views apply to transferred names.
    associatedtype Overlay: Sendable

    /// Builds the zone to answer from out of `transfers` and `overlay` and swaps it into service
    /// whole. `transfers` lists the zones for every client first, then each view's own transfer
    /// (whose zone is always among the first).
    ///
    /// - Returns: how many names are in service now.
    /// - Throws: ``HTTPDNSFleetError`` `.invalidZone` when the combination breaks the zone rules;
    ///   the zone in service stays.
    func serveTransferred(_ transfers: [HTTPDNSTransferredZone], overlay: Overlay) throws(HTTPDNSFleetError) -> Int

    /// What `/ready` says from now on, asked on each request.
    func setFollowerReadiness(_ readiness: @escaping @Sendable () -> HTTPDNSFollowerReadiness)

    /// One attempt on `zone` (for `view`, when the view has its own transfer) ended with `result`;
    /// `reasons` are the failures' short names (one per primary that failed, `checks` for a zone
    /// refused).
    func countTransfer(_ zone: String, view: String?, _ result: HTTPDNSTransferResult, reasons: [String])

    /// The serial of `zone` (for `view`) in service now; nil: none (loading, or expired).
    func countSerial(_ zone: String, view: String?, _ serial: UInt32?)

    /// A zone was put into service with `names` names, or (nil) could not be.
    func countZoneLoad(names: Int?)
}

/// One transfer's zone, for every client (`view` nil) or for one view.
package struct HTTPDNSTransferredZone: Sendable {
    package var snapshot: DNSZoneSnapshot
    package var view: String?

    package init(_ snapshot: DNSZoneSnapshot, view: String? = nil) {
        self.snapshot = snapshot
        self.view = view
    }
}

/// What `/ready` says about the zones followed.
package struct HTTPDNSFollowerReadiness: Sendable, Hashable {
    /// Why the service is not ready (`loading example.com`); empty: ready.
    package var notReady: [String] = []
    /// Said after `ready` when ready (`example.com serial 7 from disk, …`).
    package var notes: [String] = []

    package init(notReady: [String] = [], notes: [String] = []) {
        self.notReady = notReady
        self.notes = notes
    }
}

/// What became of a secondary's attempt (issue 24).
package enum HTTPDNSTransferResult: Int, CaseIterable, Sendable {
    /// A whole zone came by AXFR (or IXFR in AXFR form) and went into service.
    case axfr
    /// An IXFR's differences went into service.
    case ixfr
    /// The primary confirmed the serial held.
    case current
    /// No primary gave a usable zone.
    case failed
    /// A zone came but broke the zone rules: the old zone stays.
    case rejected

    /// The metric label.
    package var label: String {
        switch self {
        case .axfr: "axfr"
        case .ixfr: "ixfr"
        case .current: "current"
        case .failed: "failed"
        case .rejected: "rejected"
        }
    }
}
