import HTTPDNSCore
import HTTPDNSFleet
import HTTPDNSOperations

extension HTTPDNSServerMetrics {
    /// What became of a secondary's attempt (issue 24).
    package typealias TransferResult = HTTPDNSTransferResult

    /// A followed zone: its name, and the view when the view has its own transfer.
    struct TransferKey: Hashable, Comparable {
        var zone: String
        var view: String?

        /// `zone="…"`, and `,view="…"` for a view's own transfer.
        var labels: String {
            "zone=\"\(HTTPDNSServerMetrics.labelValue(zone))\"" + (view.map { ",view=\"\(HTTPDNSServerMetrics.labelValue($0))\"" } ?? "")
        }

        static func < (lhs: Self, rhs: Self) -> Bool { lhs.labels < rhs.labels }
    }

    /// Per followed zone: results, failure reasons, the serial in service.
    struct TransferState {
        var results: [TransferKey: [UInt64]] = [:]
        var reasons: [TransferKey: [String: UInt64]] = [:]
        var serials: [TransferKey: UInt32] = [:]
    }

    /// One attempt on `zone` (for `view`, when the view has its own transfer) ended with `result`;
    /// `reasons` are the failures' short names (one per primary that failed, `checks` for a
    /// rejected zone).
    package func zoneTransfer(_ zone: String, view: String? = nil, _ result: TransferResult, reasons: [String] = []) {
        let zone = TransferKey(zone: zone, view: view)
        transfers.withLock { state in
            state.results[zone, default: [UInt64](repeating: 0, count: TransferResult.allCases.count)][result.rawValue] &+= 1
            for reason in reasons { state.reasons[zone, default: [:]][reason, default: 0] &+= 1 }
        }
    }

    /// The serial of `zone` (for `view`) in service now; nil: none (loading, or expired).
    package func zoneSerial(_ zone: String, view: String? = nil, _ serial: UInt32?) {
        let zone = TransferKey(zone: zone, view: view)
        transfers.withLock { $0.serials[zone] = serial }
    }

    /// The transfer families, appended to ``render()``'s text; nothing when no zone is followed.
    func renderTransfers(into text: inout HTTPDNSPrometheusText) {
        let state = transfers.withLock { $0 }
        guard !state.results.isEmpty || !state.serials.isEmpty else { return }
        text.family("zone_transfers_total", "counter", "Secondary zone attempts, by zone and result.")
        for zone in state.results.keys.sorted() {
            for result in TransferResult.allCases {
                text.sample("zone_transfers_total", "\(zone.labels),result=\"\(result.label)\"", state.results[zone]![result.rawValue])
            }
        }
        text.family("zone_transfer_failures_total", "counter", "Secondary zone transfers that gave no zone, by zone and reason.")
        for zone in state.reasons.keys.sorted() {
            for (reason, count) in state.reasons[zone]!.sorted(by: { $0.key < $1.key }) {
                text.sample("zone_transfer_failures_total", "\(zone.labels),reason=\"\(Self.labelValue(reason))\"", count)
            }
        }
        text.family("zone_serial", "gauge", "The SOA serial of a secondary zone in service (absent while loading or expired).")
        for (zone, serial) in state.serials.sorted(by: { $0.key < $1.key }) {
            text.sample("zone_serial", zone.labels, serial)
        }
    }
}
