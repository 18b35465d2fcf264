import Foundation
import HTTPDNSCore
import HTTPDNSOperations
import HTTPServing

extension HTTPDNSService {
    /// `GET /status`: the operator's view of the service, behind ``Admin/token``: JSON by default,
    /// the console's HTML page (``HTTPDNSStatusPage``) for a browser.
    ///
    /// The token comes as `Authorization: Bearer TOKEN` (RFC 6750 §2.1) or as the password of HTTP
    /// Basic (RFC 7617, any user name), which is what a browser's login dialog sends. None (or
    /// another scheme) is `401` with a `WWW-Authenticate` challenge for each, a wrong token `403`,
    /// and without a configured token the endpoint does not exist (`404`). The document is one
    /// object with a member per section (``statusDocument()``); the page shows the same document.
    func handleStatus(_ request: HTTPServer.Request) -> HTTPServer.Response {
        guard let token = configuration.admin.token else { return Self.text("not found\n", status: 404) }
        guard let given = Self.adminToken(request.header("Authorization")) else {
            var response = Self.text("authorization required\n", status: 401)
            // Basic first: a browser shows its login dialog for the first scheme it knows.
            response.headers.append(HTTPServer.Header(name: "WWW-Authenticate", value: "Basic realm=\"httpdns\", charset=\"UTF-8\""))
            response.headers.append(HTTPServer.Header(name: "WWW-Authenticate", value: "Bearer realm=\"httpdns\""))
            return response
        }
        guard Self.tokensMatch(given, token) else { return Self.text("forbidden\n", status: 403) }
        let document = statusDocument()
        var response: HTTPServer.Response
        if HTTPDNSStatusPage.prefersHTML(accept: request.header("Accept")) {
            response = HTTPServer.Response(
                headers: [HTTPServer.Header(name: "Content-Type", value: HTTPDNSStatusPage.contentType)]
                    + HTTPDNSStatusPage.headers.map { HTTPServer.Header(name: $0.name, value: $0.value) },
                body: Data(HTTPDNSStatusPage.render(title: "httpdns serve", document: document).utf8))
        } else {
            response = Self.json(document.json + "\n")
            response.headers.append(HTTPServer.Header(name: "Cache-Control", value: "no-store"))
        }
        // The answer differs by Accept: a cache between must not hand the page to curl.
        response.headers.append(HTTPServer.Header(name: "Vary", value: "Accept, Authorization"))
        return response
    }

    /// The status document, its sections in order: origin health, report decisions (by view too),
    /// the zones and their transfers, Redis, queries by view and format, and load shed.
    func statusDocument() -> HTTPDNSStatusValue {
        .object([
            ("health", healthStatus()), ("reports", reportState.statusSection()), ("zones", metrics.zonesStatus()),
            ("redis", reportState.redisStatus()), ("queries", metrics.queriesStatus()), ("shed", metrics.shedStatus()),
        ])
    }

    /// The `health` section: every checked address and check with its state, names and last probe.
    func healthStatus() -> HTTPDNSStatusValue {
        let table = health.table
        let now = ContinuousClock.now
        let wallNow = configuration.clock.now()
        func wall(_ instant: ContinuousClock.Instant) -> HTTPDNSStatusValue {
            let ago = now - instant
            let seconds = wallNow - (Double(ago.components.seconds) + Double(ago.components.attoseconds) / 1e18)
            return .number(String(format: "%.3f", seconds))
        }
        let origins = table.statuses.sorted { $0.key < $1.key }.map { target, status -> HTTPDNSStatusValue in
            var members: [(String, HTTPDNSStatusValue)] = [
                ("address", .string(target.address.description)),
                ("check", .string(target.check.label)),
                ("state", .string(status.isUp ? "up" : "down")),
                ("since", wall(status.since)),
                ("names", .array((table.targets.names[target] ?? []).map(HTTPDNSStatusValue.string))),
                ("probes", .integer(status.probes)),
                ("failures", .integer(status.failures)),
            ]
            if let last = status.last {
                members.append(("last", .object([
                    ("passed", .bool(last.passed)),
                    ("error", last.error.map(HTTPDNSStatusValue.string) ?? .null),
                    ("status", last.status.map { .integer($0) } ?? .null),
                    ("at", wall(last.at)),
                ])))
            } else {
                members.append(("last", .null))
            }
            return .object(members)
        }
        return .object([
            ("origins", .array(origins)),
            ("down", .integer(table.down.count)),
            ("failOpen", .integer(configuration.metrics.healthFailOpenCount)),
            ("maxProbesInFlight", .integer(health.maxInFlight)),
        ])
    }

    /// Checks ``Configuration/health`` and ``Configuration/admin`` before listening.
    func validateHealthAndAdmin() throws(HTTPDNSServiceError) {
        guard (1...10_000).contains(configuration.health.maxProbesInFlight) else {
            throw HTTPDNSServiceError(.invalidConfiguration, "health: maxProbesInFlight must be 1...10000")
        }
        if let token = configuration.admin.token {
            guard (16...512).contains(token.utf8.count), token.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else {
                throw HTTPDNSServiceError(
                    .invalidConfiguration, "admin token must be 16 to 512 printable ASCII characters without spaces")
            }
        }
        if case .caFile(let path) = configuration.health.trust, !FileManager.default.isReadableFile(atPath: path) {
            throw HTTPDNSServiceError(.invalidConfiguration, "health: cannot read CA file \(path)")
        }
    }
}
