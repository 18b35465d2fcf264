import HTTPDNSCore
import HTTPDNSFleet

/// The service as the zone followers feed it (HTTPDNSFleet never names the service): the
/// transferred zones combined with the overlay and swapped in, `/ready`, and the transfer metrics.
extension HTTPDNSService: HTTPDNSZoneSink {
    package typealias Overlay = HTTPDNSZone

    package func serveTransferred(_ transfers: [HTTPDNSTransferredZone], overlay: HTTPDNSZone) throws(HTTPDNSFleetError) -> Int {
        do throws(HTTPDNSServiceError) {
            let zone = try HTTPDNSZone.combined(transfers, overlay: overlay)
            try reload(zone: zone)
            return zone.entries.count
        } catch {
            throw HTTPDNSFleetError(.invalidZone, error.detail)
        }
    }

    package func setFollowerReadiness(_ readiness: @escaping @Sendable () -> HTTPDNSFollowerReadiness) {
        setReadiness {
            let followers = readiness()
            return Readiness(notReady: followers.notReady, notes: followers.notes)
        }
    }

    package func countTransfer(_ zone: String, view: String?, _ result: HTTPDNSTransferResult, reasons: [String]) {
        metrics.zoneTransfer(zone, view: view, result, reasons: reasons)
    }

    package func countSerial(_ zone: String, view: String?, _ serial: UInt32?) {
        metrics.zoneSerial(zone, view: view, serial)
    }

    package func countZoneLoad(names: Int?) {
        if let names { metrics.zoneLoaded(names: names) } else { metrics.zoneLoadFailed() }
    }
}
