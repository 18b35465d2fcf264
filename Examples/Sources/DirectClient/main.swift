// Examples/Sources/DirectClient/main.swift — the engine and the client without URLSession.
// Usage: DirectClient URL PROVIDER [LOCALDNS] [--allow-private]
//   e.g. DirectClient https://api.example.com/v1/feed "doh=https://dns.example/dns-query?bootstrap=192.0.2.53" udp=192.168.1.1:53
//   LOCALDNS is the resolver the hijack check compares with (default: the system's).
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPDNSDirect

let arguments = CommandLine.arguments.filter { !$0.hasPrefix("--") }
guard arguments.count >= 3, let url = URL(string: arguments[1]), let host = url.host else {
    print("usage: DirectClient URL PROVIDER [LOCALDNS] [--allow-private]")
    exit(64)
}
var configuration = HTTPDNSConfiguration(resolvers: [try HTTPDNSProviderSpec(parsing: arguments[2]).makeResolver()])
if arguments.count > 3 {
    configuration.localDNS = .custom(try HTTPDNSProviderSpec(parsing: arguments[3]).makeResolver())
}
configuration.hygiene = HTTPDNSAnswerHygiene(allowPrivate: CommandLine.arguments.contains("--allow-private"))
let engine = HTTPDNSEngine(configuration: configuration)
let client = HTTPDNSClient(engine: engine)

do {
    // Just the addresses.
    let answer = try await engine.resolve(host)
    print("\(host) -> \(answer.addresses.map(\.description).joined(separator: ", ")) (ttl \(answer.ttl), from \(answer.source))")

    // The whole body at once.
    let (data, response) = try await client.data(for: URLRequest(url: url))
    print("HTTP \(response.statusCode), \(data.count) bytes")

    // The body as it arrives.
    let (head, body) = try await client.bytes(for: URLRequest(url: url))
    var received = 0
    for try await chunk in body {
        received += chunk.count
    }
    print("streamed HTTP \(head.statusCode), \(received) bytes")

    // Is the local resolver lying about this name? The same verdict as `httpdns check`.
    let report = await engine.checkHijack(host)
    print(report.isHijack ? "LocalDNS lies about \(host)" : "LocalDNS: \(report.verdict.rawValue)")
} catch {
    print("failed: \(error.localizedDescription)")
    exit(1)
}
