// Examples/Sources/ProtectProcess/main.swift — protect code you cannot change, URLSession.shared included.
// Usage: ProtectProcess URL PROVIDER [--allow-private]
//   e.g. ProtectProcess https://api.example.com/v1/feed "dnspod=https://119.29.29.99?token=YOUR_TOKEN"
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPDNSLoopbackProxy

let arguments = CommandLine.arguments
guard arguments.count >= 3, let url = URL(string: arguments[1]), let host = url.host else {
    print("usage: ProtectProcess URL PROVIDER [--allow-private]")
    exit(64)
}
let allowPrivate = arguments.contains("--allow-private")

var configuration = HTTPDNSConfiguration(resolvers: [try HTTPDNSProviderSpec(parsing: arguments[2]).makeResolver()])
configuration.protectedHosts = HTTPDNSHostPolicy([host])
configuration.hygiene = HTTPDNSAnswerHygiene(allowPrivate: allowPrivate)
let engine = HTTPDNSEngine(configuration: configuration)

// A loopback proxy that resolves through the engine, and this process's http(s)_proxy pointed at it:
// every URLSession (and libcurl, and child processes) now connects where HTTPDNS says, while TLS
// stays end to end on the real name. Keep `proxy`: when it goes, the process points at a closed port.
var proxyConfiguration = HTTPDNSProxy.Configuration()
proxyConfiguration.allowPrivateTargets = allowPrivate  // loopback and private targets are refused unless allowed
let proxy = try HTTPDNSProxy.startForProcess(engine: engine, configuration: proxyConfiguration)

do {
    // Unchanged code: URLSession.shared knows nothing of HTTPDNS.
    let (data, response) = try await URLSession.shared.data(from: url)
    let status = (response as? HTTPURLResponse)?.statusCode ?? 0
    print("HTTP \(status), \(data.count) bytes")
    print(String(decoding: data.prefix(200), as: UTF8.self))
} catch {
    print("failed: \(error.localizedDescription)")
    exit(1)
}
proxy.stop()
