#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPDNS
import HTTPDNSCore
import HTTPDNSTransport
import HTTPDNSNetworking

/// One comparison per URL.
struct DemoRun {
    let bed: DemoBed
    let engine: HTTPDNSEngine
    let client: HTTPDNSClient
    let transport = HTTPTransport()
    let localDNS: HTTPDNSUDPResolver

    init(bed: DemoBed) {
        self.bed = bed
        localDNS = HTTPDNSUDPResolver(server: bed.dnsmasq.address, port: bed.dnsmasq.port, timeout: .seconds(2))
        // The provider spec is what `--provider dnspod=URL` builds; LocalDNS is the lying dnsmasq.
        let provider = (try? HTTPDNSProviderSpec(parsing: "dnspod=\(bed.httpdnsURL)").makeResolver(transport: transport))
            ?? HTTPDNSStaticResolver([:])
        var configuration = HTTPDNSConfiguration(resolvers: [provider])
        configuration.localDNS = .server(bed.dnsmasq.address, port: bed.dnsmasq.port)
        configuration.protectedHosts = HTTPDNSHostPolicy(["*.demo.test"])
        // Loopback is where this demo's servers live; real deployments keep the default (dropped).
        configuration.hygiene = HTTPDNSAnswerHygiene(allowPrivate: true)
        configuration.trust = .caFile(bed.certificates.caCertificatePath)
        engine = HTTPDNSEngine(configuration: configuration)
        var clientConfiguration = HTTPDNSClient.Configuration()
        clientConfiguration.connectTimeout = .seconds(3)
        client = HTTPDNSClient(engine: engine, transport: transport, configuration: clientConfiguration)
    }

    func compare(_ url: URL) async {
        let host = url.host ?? "?"
        async let plain = unprotected(url)
        async let protected = protectedFetch(url)
        let left = await plain
        let right = await protected
        var lines = ["\(url.absoluteString)"]
        lines += DemoRun.columns(
            ["WITHOUT protection (system LocalDNS)"] + left, ["WITH swift-httpdns (HTTPDNS first)"] + right)
        // For HTTPS, confirm by connecting (what `httpdns check --probe-port` does).
        let probePort = url.scheme == "https" ? url.port : nil
        let report = await engine.checkHijack(host, check: HTTPDNSHijackCheck(probePort: probePort))
        lines.append("  httpdns check \(host)\(probePort.map { " --probe-port \($0)" } ?? ""):")
        lines += report.description.split(separator: "\n").dropFirst().map { "  \($0)" }
        DemoOutput.line(lines.joined(separator: "\n") + "\n")
    }

    /// What an app without protection gets: LocalDNS's address, then a normal (verified) request.
    func unprotected(_ url: URL) async -> [String] {
        let host = url.host ?? "?"
        let address: HTTPDNSIPAddress
        do {
            guard let first = try await localDNS.resolve(host, family: .ipv4).ipv4.first else { return ["LocalDNS: no address"] }
            address = first
        } catch {
            return ["LocalDNS failed: \(DemoRun.describe(error))"]
        }
        var lines = ["DNS     \(host) -> \(address)", "via     \(localDNS.name) (the system's resolver)"]
        var request = HTTPTransportRequest(url: url)
        request.pinnedAddresses = [address]
        request.trust = .caFile(bed.certificates.caCertificatePath)
        request.timeouts = .init(connect: .seconds(3), total: .seconds(10), idle: .seconds(10))
        do {
            let response = try await transport.send(request)
            lines.append("HTTP    \(response.statusCode) from \(response.connectedAddress?.description ?? "?")")
            lines.append("body    \(DemoRun.snippet(response.body))")
            lines.append("=> the hijacker's page, and nothing looked wrong")
        } catch {
            lines.append("TLS     certificate did NOT verify for \(host)")
            lines.append("error   \(error.detail)")
            lines.append("=> the site is unreachable")
        }
        return lines
    }

    /// The same request through swift-httpdns.
    func protectedFetch(_ url: URL) async -> [String] {
        let host = url.host ?? "?"
        do {
            let result = try await client.send(URLRequest(url: url))
            let connection = result.connection
            var lines: [String] = []
            if let answer = connection.answer {
                let addresses = answer.addresses.map(\.description).joined(separator: ", ")
                lines.append("DNS     \(host) -> \(addresses)  (ttl \(answer.ttl))")
                lines.append("via     \(answer.source)")
            }
            let address = connection.connectedAddress?.description ?? "?"
            if url.scheme == "https" {
                lines.append("TLS     SNI \(host), certificate verified")
            }
            lines.append("HTTP    \(result.response.statusCode) from \(address) over HTTP/\(connection.httpVersion)")
            lines.append("body    \(DemoRun.snippet(result.body))")
            lines.append("=> the real site")
            return lines
        } catch {
            return ["failed: \(DemoRun.describe(error))"]
        }
    }

    /// The detail (a demo shows what went wrong, not the sentence an app would show).
    static func describe(_ error: any Error) -> String {
        if let error = error as? HTTPDNSError { return error.debugDescription }
        if let underlying = (error as? URLError)?.httpdnsUnderlyingError { return String(describing: underlying) }
        return String(describing: error)
    }

    static func snippet(_ body: Data) -> String {
        let text = String(decoding: body.prefix(200), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return "\"\(text)\""
    }

    /// Two columns side by side; long lines of the left column wrap inside it, the right column runs on.
    static func columns(_ left: [String], _ right: [String], width: Int = 54) -> [String] {
        func wrap(_ lines: [String]) -> [String] {
            lines.flatMap { line -> [String] in
                var rest = Substring(line)
                var out: [String] = []
                while rest.count > width {
                    out.append(String(rest.prefix(width)))
                    rest = "        " + rest.dropFirst(width)
                }
                out.append(String(rest))
                return out
            }
        }
        let l = wrap(left)
        let r = right
        return (0..<max(l.count, r.count)).map { index in
            let a = index < l.count ? l[index] : ""
            let b = index < r.count ? r[index] : ""
            return "  " + a.padding(toLength: width, withPad: " ", startingAt: 0) + " | " + b
        }
    }
}
