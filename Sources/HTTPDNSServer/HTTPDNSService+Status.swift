import Foundation
import HTTPDNSCore
import HTTPServing

extension HTTPDNSService {
    /// `GET /status`: the operator's JSON view of the service, behind ``Admin/token``.
    ///
    /// `Authorization: Bearer TOKEN` (RFC 6750 §2.1); none (or another scheme) is `401` with
    /// `WWW-Authenticate: Bearer`, a wrong token `403`, and without a configured token the endpoint
    /// does not exist (`404`). The body is one object with a member per section
    /// (``statusSections()``), so that each concern adds its own.
    func handleStatus(_ request: HTTPServer.Request) -> HTTPServer.Response {
        guard let token = configuration.admin.token else { return Self.text("not found\n", status: 404) }
        guard let given = Self.bearerToken(request.header("Authorization")) else {
            var response = Self.text("authorization required\n", status: 401)
            response.headers.append(HTTPServer.Header(name: "WWW-Authenticate", value: "Bearer realm=\"httpdns\""))
            return response
        }
        guard Self.tokensMatch(given, token) else { return Self.text("forbidden\n", status: 403) }
        var response = Self.json(HTTPDNSServiceJSON.object(statusSections().map { ($0.name, $0.json) }) + "\n")
        response.headers.append(HTTPServer.Header(name: "Cache-Control", value: "no-store"))
        return response
    }

    /// The sections of `/status`, in order: each a member name and its JSON value.
    func statusSections() -> [(name: String, json: String)] {
        [("health", healthStatusJSON()), ("reports", reportStatusSection())]
    }

    /// The `health` section: every checked address and check with its state, names and last probe.
    func healthStatusJSON() -> String {
        let table = health.table
        let now = ContinuousClock.now
        let wallNow = configuration.clock.now()
        func wall(_ instant: ContinuousClock.Instant) -> String {
            let ago = now - instant
            let seconds = wallNow - (Double(ago.components.seconds) + Double(ago.components.attoseconds) / 1e18)
            return String(format: "%.3f", seconds)
        }
        let origins = table.statuses.sorted { $0.key < $1.key }.map { target, status in
            var members: [(String, String)] = [
                ("address", HTTPDNSServiceJSON.string(target.address.description)),
                ("check", HTTPDNSServiceJSON.string(target.check.label)),
                ("state", HTTPDNSServiceJSON.string(status.isUp ? "up" : "down")),
                ("since", wall(status.since)),
                ("names", HTTPDNSServiceJSON.array(table.targets.names[target] ?? [])),
                ("probes", String(status.probes)),
                ("failures", String(status.failures)),
            ]
            if let last = status.last {
                members.append(("last", HTTPDNSServiceJSON.object([
                    ("passed", last.passed ? "true" : "false"),
                    ("error", last.error.map(HTTPDNSServiceJSON.string) ?? "null"),
                    ("status", last.status.map(String.init) ?? "null"),
                    ("at", wall(last.at)),
                ])))
            } else {
                members.append(("last", "null"))
            }
            return HTTPDNSServiceJSON.object(members)
        }
        return HTTPDNSServiceJSON.object([
            ("origins", "[" + origins.joined(separator: ",") + "]"),
            ("down", String(table.down.count)),
            ("failOpen", String(configuration.metrics.healthFailOpenCount)),
            ("maxProbesInFlight", String(health.maxInFlight)),
        ])
    }

    /// The token of an `Authorization: Bearer TOKEN` value (scheme case-insensitive), nil for
    /// anything else.
    static func bearerToken(_ value: String?) -> String? {
        guard let value, value.utf8.count <= 1_024 else { return nil }
        let bytes = Array(value.utf8)
        let scheme = Array("bearer ".utf8)
        guard bytes.count > scheme.count, zip(bytes, scheme).allSatisfy({ HTTPDNSASCII.lowercased($0) == $1 }) else { return nil }
        let token = bytes[scheme.count...].drop { $0 == UInt8(ascii: " ") }
        return token.isEmpty ? nil : String(decoding: token, as: UTF8.self)
    }

    /// Compares digests of the two tokens in constant time, so that the time taken says nothing
    /// about how much of a guess was right (nor its length).
    static func tokensMatch(_ given: String, _ expected: String) -> Bool {
        let lhs = HTTPDNSCrypto.sha256(Array(given.utf8))
        let rhs = HTTPDNSCrypto.sha256(Array(expected.utf8))
        var difference: UInt8 = 0
        for (left, right) in zip(lhs, rhs) { difference |= left ^ right }
        return difference == 0 && lhs.count == rhs.count
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
