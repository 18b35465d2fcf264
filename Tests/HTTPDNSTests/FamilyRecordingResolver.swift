import HTTPDNS
import HTTPDNSCore

/// A resolver that answers from a fixed table and records every (host, family) it was asked.
final class FamilyRecordingResolver: HTTPDNSResolver {
    let name: String
    private let state: HTTPDNSLock<(answers: [String: [String]], asked: [String], ttl: Int?, fails: Bool)>

    init(_ name: String, answers: [String: [String]], ttl: Int? = 600) {
        self.name = name
        self.state = HTTPDNSLock((answers, [], ttl, false))
    }

    /// "host family" for each call, in order.
    var asked: [String] { state.withLock { $0.asked } }

    func set(_ host: String, _ addresses: [String]) { state.withLock { $0.answers[host] = addresses } }
    func setFailing(_ fails: Bool) { state.withLock { $0.fails = fails } }

    func resolve(_ host: String, family: HTTPDNSAddressFamily) async throws -> HTTPDNSRecordSet {
        let (texts, ttl, fails) = state.withLock { state -> ([String], Int?, Bool) in
            state.asked.append("\(host) \(family)")
            return (state.answers[host] ?? [], state.ttl, state.fails)
        }
        if fails { throw HTTPDNSError(.transport, "scripted failure", host: host, source: name) }
        guard !texts.isEmpty else { throw HTTPDNSError(.nameNotFound, "no such name", host: host, source: name) }
        let addresses = texts.compactMap(HTTPDNSIPAddress.init)
        return HTTPDNSRecordSet(
            host: host, ipv4: addresses.filter { $0.family == .v4 }, ipv6: addresses.filter { $0.family == .v6 }, ttl: ttl)
    }
}
