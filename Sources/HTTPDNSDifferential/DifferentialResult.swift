import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a scenario observed, compared between routes: status, the headers that matter, a hash of
/// the body, the error code, cookie jars and delegate call counts.
///
/// Only facts every route must reproduce go here; chunk sizes or timings do not.
public struct DifferentialResult: Codable, Sendable, Equatable {
    /// Per request (or task) of the scenario, in a fixed order.
    public var exchanges: [Exchange] = []
    /// Scenario-wide facts: cookie jars, delegate calls, counts (sorted keys in JSON).
    public var facts: [String: String] = [:]

    public init() {}

    /// One request's observable outcome.
    public struct Exchange: Codable, Sendable, Equatable {
        public var label: String
        public var status: Int?
        public var headers: [String: String] = [:]
        public var bodyLength: Int?
        public var bodySHA256: String?
        /// `URLError` code (raw value), or nil on success.
        public var error: Int?

        public init(label: String) {
            self.label = label
        }
    }

    /// The response headers compared (lower-cased); the origin echoes what it saw in `X-…` fields.
    public static let comparedHeaders = [
        "content-type", "content-encoding", "location", "www-authenticate", "cache-control",
        "x-method", "x-host", "x-body-length", "x-body-sha256", "x-cookie", "x-authorization", "x-protocol", "x-hits",
    ]

    /// Records an exchange from what `URLSession` returned.
    public mutating func record(_ label: String, data: Data?, response: URLResponse?, error: (any Error)?) {
        var exchange = Exchange(label: label)
        if let http = response as? HTTPURLResponse {
            exchange.status = http.statusCode
            for name in Self.comparedHeaders {
                if let value = http.value(forHTTPHeaderField: name) { exchange.headers[name] = value }
            }
        }
        if let data {
            exchange.bodyLength = data.count
            exchange.bodySHA256 = DifferentialHash.sha256(data)
        }
        if let error {
            exchange.error = (error as? URLError)?.code.rawValue ?? -1
            exchange.bodyLength = nil
            exchange.bodySHA256 = nil
        }
        exchanges.append(exchange)
    }

    /// Canonical JSON: sorted keys, so equal results print equal.
    public func canonicalJSON() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: (try? encoder.encode(self)) ?? Data(), as: UTF8.self)
    }
}

/// What a runner prints for one scenario (one line of JSON).
public struct DifferentialReport: Codable, Sendable {
    public var scenario: String
    public var route: String
    public var result: DifferentialResult
    /// Route-specific evidence (not compared): e.g. how many lookups went through HTTPDNS.
    public var proof: [String: Int]
    /// Set when the scenario could not run at all.
    public var failure: String?

    public init(scenario: String, route: String, result: DifferentialResult, proof: [String: Int], failure: String?) {
        self.scenario = scenario
        self.route = route
        self.result = result
        self.proof = proof
        self.failure = failure
    }
}
