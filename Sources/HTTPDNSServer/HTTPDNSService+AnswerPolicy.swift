import HTTPDNSCore

extension HTTPDNSService {
    /// The zone addresses of one family that a name answers: the one function every answer format
    /// goes through (DNSPod, Alibaba, DoH wire and JSON, IP list, and so every kept wire answer).
    ///
    /// Addresses whose check is down (``HTTPDNSHealthMonitor``) are left out. When that would leave
    /// none, all of them are answered instead (**fail open**: a client with addresses to try is better
    /// off than one with none, and a check can be wrong), counted in
    /// `httpdns_health_fail_open_total`, and the answer is not kept as a wire answer so that each
    /// one is counted.
    ///
    /// Cheap on the hot path: the down set is the request's snapshot, read once when it started; an
    /// unchecked entry or an empty down set returns the list as it is.
    ///
    /// - Parameters:
    ///   - host: the zone key that matched (the name, or the wildcard that answered it).
    ///   - view: the name of the client's view.
    ///   - addresses: the entry's addresses of one family, in zone order.
    ///   - check: the entry's check, nil when it has none.
    ///   - lookups: the request, with its health snapshot.
    /// - Returns: the addresses to answer, in zone order.
    func answerAddresses(
        _ host: String, view: String, _ addresses: [HTTPDNSIPAddress], check: HTTPDNSHealthCheck?,
        _ lookups: HTTPDNSServiceLookups
    ) -> [HTTPDNSIPAddress] {
        guard !addresses.isEmpty else { return addresses }
        var answer = addresses
        if let check, !lookups.health.down.isEmpty {
            let up = addresses.filter { !lookups.health.isDown($0, check) }
            if up.isEmpty {
                lookups.failedOpen = true
                configuration.metrics.healthFailedOpen()
            } else {
                answer = up
            }
        }
        // Apps' failure reports (``Reports``): down for all, or last in the reporting view. An answer
        // they changed is not kept as a wire answer: decisions end by time, kept answers do not.
        let ordered = reportState.order(answer, view: view)
        if ordered != answer {
            lookups.reordered = true
            answer = ordered
        }
        return answer
    }
}
