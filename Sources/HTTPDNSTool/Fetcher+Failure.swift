import Foundation
import HTTPDNSCore
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension Fetcher {
    /// The one error line for a request the client could not complete.
    ///
    /// The client's `URLError` carries the transport's description (`code for HOST at ADDRESS (curl N):
    /// detail`) or the engine's; the monitor adds what the engine saw (every provider's reason) and
    /// the addresses the host was given. Addresses the client found unreachable are cooling down in
    /// the engine, which is how the line can list every address tried, not only the last.
    func describe(_ error: URLError, url: URL) -> String {
        let host = Fetcher.bareHost(url)
        let text = error.localizedDescription
        if var failure = monitor.failure(for: host), failure.description == text {
            // "--resolve has no entry for this host" is no news in the line about why it failed.
            failure.attempts.removeAll { $0.source == FetcherMonitor.staticSource && $0.error.code == .nameNotFound }
            return "cannot resolve \(host): \(Command.explain(failure))"
        }
        let attempted = Fetcher.attemptedAddress(in: text)
        let detail = Fetcher.detail(of: text)
        var tried = monitor.addresses(for: host).filter { client.engine.isCoolingDown($0) && $0 != attempted }
        if let attempted { tried.append(attempted) }
        let triedText = tried.map(\.description).joined(separator: ", ")
        switch error.code {
        case .serverCertificateUntrusted:
            let at = attempted.map { " at \($0)" } ?? ""
            return "certificate for \(host)\(at) did not verify: \(detail)"
        case .cannotFindHost where tried.isEmpty:
            return "cannot resolve \(host): \(detail)"
        case .cannotConnectToHost, .cannotFindHost:
            let list = tried.isEmpty ? "" : " (tried \(triedText))"
            return "cannot connect to \(host) port \(Fetcher.effectivePort(url))\(list): \(detail)"
        default:
            let list = tried.isEmpty ? "" : " (addresses \(triedText))"
            return "request to \(url.absoluteString) failed\(list): \(Fetcher.codeName(of: text)): \(detail)"
        }
    }

    /// The URL host without IPv6 brackets.
    static func bareHost(_ url: URL) -> String {
        let host = url.host ?? "?"
        return host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
    }

    /// The address in a transport description (`… at ADDRESS (curl N): …`), if there is one.
    static func attemptedAddress(in text: String) -> IPAddress? {
        guard let at = text.range(of: " at ") else { return nil }
        let rest = text[at.upperBound...]
        let end = [rest.range(of: " (")?.lowerBound, rest.range(of: ": ")?.lowerBound].compactMap { $0 }.min() ?? rest.endIndex
        return IPAddress(String(rest[..<end]))
    }

    /// The transport's code name, the description's first word (`timedOut`, `networkConnectionLost`).
    static func codeName(of text: String) -> String {
        String(text.prefix { $0 != " " && $0 != ":" })
    }

    /// What happened, without the code, host and address the line already names.
    static func detail(of text: String) -> String {
        if let curl = text.range(of: "): ") { return stripPinningName(String(text[curl.upperBound...])) }
        if let colon = text.range(of: ": ") { return stripPinningName(String(text[colon.upperBound...])) }
        return text
    }

    /// libcurl names the transport's synthetic pinning host (`….pin.httpdns.invalid`) in its messages;
    /// keep only the final clause, which says what happened.
    static func stripPinningName(_ text: String) -> String {
        guard text.contains(".pin.httpdns.invalid"), let range = text.range(of: ": ", options: .backwards) else { return text }
        return String(text[range.upperBound...])
    }
}
