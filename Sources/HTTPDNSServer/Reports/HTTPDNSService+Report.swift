import Foundation
@_spi(HTTPDNSPackage) import HTTPDNSCore
import HTTPServing

extension HTTPDNSService {
    /// `POST /report`: an authenticated batch of addresses apps failed to reach
    /// (``HTTPDNSReportBatch``, credentials as ``HTTPDNSReportCredential``).
    ///
    /// Checked in this order, and nothing is recorded unless every check passes: the method (405),
    /// the size (413), the credential (401 missing or unreadable, 403 wrong, unknown or expired),
    /// the body (400 with the reason, or 413), the client's address. Then `202 {"accepted":N}`,
    /// N the items recorded (items naming an address the zone does not give for that name are
    /// ignored, and counted as such). The body is verified before it is parsed, so an anonymous
    /// client costs a hash, never a JSON parse.
    func handleReport(_ request: HTTPServer.Request, _ lookups: HTTPDNSServiceLookups) -> HTTPServer.Response {
        let counters = reportState.counters
        guard request.method == "POST" else {
            counters.count(.methodNotAllowed)
            return Self.methodNotAllowed("POST")
        }
        guard request.body.count <= HTTPDNSReportBatch.maxBodyBytes else {
            counters.count(.tooLarge)
            return Self.text("report body too large\n", status: 413)
        }
        let body = [UInt8](request.body)
        // Two Authorization fields could be read differently by two readers: neither is believed.
        let authorizations = request.headers.filter { HTTPDNSASCII.equalsIgnoringCase($0.name, "authorization") }
        let authorization = authorizations.count == 1 ? authorizations[0].value : (authorizations.isEmpty ? nil : "")
        switch reportState.authenticator.verify(authorization: authorization, body: body, now: configuration.clock.now()) {
        case .unauthorized(let reason):
            counters.count(.unauthorized)
            var response = Self.text(reason + "\n", status: 401)
            response.headers.append(HTTPServer.Header(name: "WWW-Authenticate", value: "Bearer, \(HTTPDNSReportCredential.hmacScheme)"))
            return response
        case .forbidden(let reason):
            counters.count(.forbidden)
            return Self.text(reason + "\n", status: 403)
        case .accepted:
            break
        }
        let batch: HTTPDNSReportBatch
        do {
            batch = try HTTPDNSReportBatch.parse(body)
        } catch {
            if error.code == .tooLarge {
                counters.count(.tooLarge)
                return Self.text("report body too large\n", status: 413)
            }
            counters.count(.malformed)
            return Self.badRequest(error.detail)
        }
        guard let client = clientAddress(of: request) else {
            counters.count(.malformed)
            return Self.badRequest("the client's address is unknown")
        }
        let zone = lookups.zone
        let owner = HTTPDNSReportCredential(header: authorization)?.owner ?? 0
        let recorded = reportState.record(batch, client: client, credential: owner) { host, address in zone.answers(host, with: address) }
        counters.count(.accepted)
        return Self.json("{\"accepted\":\(recorded)}", status: 202)
    }

    /// `/report` from the loop thread: past ``Reports/maxBatchesInFlight`` batches in hand the
    /// request is answered `503` with `Retry-After: 1` at once (counted, never dropped silently);
    /// otherwise it is verified, parsed and recorded on the cooperative pool, off the loop.
    func respondToReport(
        _ request: HTTPServer.Request, _ lookups: HTTPDNSServiceLookups, exchange: HTTPServer.Exchange, since started: ContinuousClock.Instant
    ) {
        guard request.method == "POST" else {
            let response = handleReport(request, lookups)
            observe(request, response, lookups, since: started)
            return exchange.respond(response)
        }
        guard reportState.admit() else {
            reportState.counters.count(.shed)
            var response = Self.text("too many reports in progress\n", status: 503)
            response.headers.append(HTTPServer.Header(name: "Retry-After", value: "1"))
            observe(request, response, lookups, since: started)
            return exchange.respond(response)
        }
        // The lookups object belongs to the loop thread's pass; the task makes its own.
        let (zone, wireAnswers) = (lookups.zone, lookups.wireAnswers)
        Task {
            defer { self.reportState.release() }
            let ownLookups = HTTPDNSServiceLookups(zone: zone, wireAnswers: wireAnswers)
            let response = self.handleReport(request, ownLookups)
            self.observe(request, response, ownLookups, since: started)
            exchange.respond(response)
        }
    }

    /// `addresses` as clients of `view` are to get them, after the report decisions: down ones
    /// removed (all kept if all are down), demoted ones last. The answer policy calls this.
    package func reportOrder(_ addresses: [HTTPDNSIPAddress], view: String) -> [HTTPDNSIPAddress] {
        reportState.order(addresses, view: view)
    }
}
