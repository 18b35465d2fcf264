// Examples/Sources/ProtectURLSession/main.swift — protect existing URLSession code.
// Usage: ProtectURLSession URL PROVIDER [--allow-private]
//   e.g. ProtectURLSession https://api.example.com/v1/feed "dnspod=https://119.29.29.99?token=YOUR_TOKEN"
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPDNSURLSession

let arguments = CommandLine.arguments
guard arguments.count >= 3, let url = URL(string: arguments[1]), let host = url.host else {
    print("usage: ProtectURLSession URL PROVIDER [--allow-private]")
    exit(64)
}

// The engine: HTTPDNS providers in order, a TTL cache, LocalDNS as the last resort.
var configuration = HTTPDNSConfiguration(resolvers: [try HTTPDNSProviderSpec(parsing: arguments[2]).makeResolver()])
configuration.protectedHosts = HTTPDNSHostPolicy([host])
configuration.cache.preResolve = [host]
// Loopback and private answers are dropped unless allowed (a test bed on 127.0.0.0/8 allows them).
configuration.hygiene = HTTPDNSAnswerHygiene(allowPrivate: arguments.contains("--allow-private"))
let engine = HTTPDNSEngine(configuration: configuration)
let client = HTTPDNSClient(engine: engine)

// The one line: sessions made from this configuration connect where HTTPDNS says, while Host, SNI
// and certificate verification stay on the real name. It throws (HTTPDNSURLSessionError, naming what
// is missing) on a toolchain whose corelibs lacks an internal the protocol needs: use the proxy route.
let sessionConfiguration = URLSessionConfiguration.default
try sessionConfiguration.httpdnsInstall(client)
let session = URLSession(configuration: sessionConfiguration)

do {
    let (data, response) = try await session.data(from: url)
    let status = (response as? HTTPURLResponse)?.statusCode ?? 0
    print("HTTP \(status), \(data.count) bytes")
    print(String(decoding: data.prefix(200), as: UTF8.self))
} catch {
    print("failed: \(error.localizedDescription)")
    exit(1)
}
