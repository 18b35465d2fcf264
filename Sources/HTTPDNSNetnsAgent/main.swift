// A test-support program that the namespace tests start inside a network namespace of their own
// (`ip netns exec NS httpdns-netns-agent …`): everything it opens — netlink sockets, route probes,
// DNS queries, servers, connections — belongs to that namespace. Not a product; never shipped.
//
//   watch DEBOUNCE_MS   an engine with the rtnetlink watcher on: prints `ready family=F`, then
//                       `change N family=F` after each debounced burst of changes, until killed
//   auto DNS_PORT       resolves origin.example with family .auto through an in-process HTTPDNS
//                       service (A records only) and LocalDNS [::1]:DNS_PORT (a DNS64 on IPv6-only
//                       networks), then fetches it from an origin listening on the first address;
//                       prints key=value lines
#if canImport(Glibc)
import Glibc
#endif
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPDNS
import HTTPDNSCore
import HTTPDNSServer
import HTTPDNSTestSupport
import HTTPDNSNetworking

/// One line on stdout, unbuffered: the test reads the output file while the agent runs.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func fail(_ message: String) -> Never {
    say("error=\(message)")
    exit(1)
}

/// Answers every name with 198.51.100.1 and reports each call.
final class CountingResolver: HTTPDNSResolver {
    let name = "counting"
    private let calls = HTTPDNSLock(0)
    private let report: @Sendable (Int) -> Void

    init(report: @escaping @Sendable (Int) -> Void) {
        self.report = report
    }

    var count: Int { calls.withLock { $0 } }

    func resolve(_ host: String, family: HTTPDNSAddressFamily) async throws -> HTTPDNSRecordSet {
        let count = calls.withLock { count in
            count += 1
            return count
        }
        report(count)
        return HTTPDNSRecordSet(host: host, ipv4: [HTTPDNSIPAddress("198.51.100.1")!], ipv6: [], ttl: 600)
    }
}

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "watch":
    // An engine that watches the network by itself and pre-resolves one name; each debounced change
    // re-runs pre-resolution, which the counting provider reports as `change N family=F`.
    guard arguments.count == 2, let milliseconds = Int(arguments[1]) else { fail("usage: watch DEBOUNCE_MS") }
    let engineBox = HTTPDNSLock<HTTPDNSEngine?>(nil)
    let provider = CountingResolver { count in
        guard count > 1 else { return }
        let family = engineBox.withLock { $0?.autoFamilyInUse.rawValue } ?? "?"
        say("change \(count - 1) family=\(family)")
    }
    var configuration = HTTPDNSConfiguration(resolvers: [provider])
    configuration.cache.preResolve = ["pre.example"]
    configuration.network.watchesChanges = true
    configuration.network.changeDebounce = .milliseconds(milliseconds)
    configuration.failover.httpdnsOnly = true
    let engine = HTTPDNSEngine(configuration: configuration)
    engineBox.withLock { $0 = engine }
    while provider.count == 0 { usleep(10_000) }
    guard engine.isWatchingNetwork else { fail("the engine started no watcher") }
    say("ready family=\(engine.autoFamilyInUse.rawValue)")
    while true { sleep(60) }

case "auto":
    guard arguments.count == 2, let dnsPort = UInt16(arguments[1]) else { fail("usage: auto DNS_PORT") }
    let loopback = HTTPDNSIPAddress("::1")!
    let origin = HTTPDNSIPAddress("198.51.100.10")!
    var service = HTTPDNSService.Configuration(
        zone: try HTTPDNSZone(entries: ["origin.example": .init(ipv4: [origin], ttl: 600)]))
    service.address = loopback
    let provider = HTTPDNSService(configuration: service)
    do { try provider.start() } catch { fail("provider: \(error)") }
    guard let providerPort = provider.port else { fail("provider has no port") }

    var configuration = HTTPDNSConfiguration(resolvers: [
        try HTTPDNSProviderSpec(kind: .dnspod, location: "http://[::1]:\(providerPort)").makeResolver()
    ])
    configuration.family = .auto
    configuration.localDNS = .server(loopback, port: dnsPort)
    configuration.failover.httpdnsOnly = true
    let engine = HTTPDNSEngine(configuration: configuration)
    let answer: HTTPDNSAnswer
    do { answer = try await engine.resolve("origin.example") } catch { fail("resolve: \(error)") }
    say("family=\(engine.autoFamilyInUse)")
    say("prefix=\(engine.nat64Prefix.map(\.description) ?? "none")")
    say("addresses=\(answer.addresses.map(\.description).joined(separator: ","))")
    say("source=\(answer.source)")

    guard let synthesized = answer.addresses.first else { fail("no address") }
    let server: TestHTTPServer
    do { server = try TestHTTPServer(address: synthesized.description) } catch { fail("origin on \(synthesized): \(error)") }
    let client = HTTPDNSClient(engine: engine)
    let url = URL(string: "http://origin.example:\(server.port)/echo")!
    var request = URLRequest(url: url)
    request.httpMethod = "POST"
    request.httpBody = Data("through NAT64".utf8)
    do {
        let (body, response) = try await client.data(for: request)
        say("status=\(response.statusCode)")
        say("body=\(String(decoding: body, as: UTF8.self))")
        say("served-by=\(response.value(forHTTPHeaderField: "X-Server-Address") ?? "?")")
        say("host-header=\(response.value(forHTTPHeaderField: "X-Echo-Host") ?? "?")")
    } catch {
        fail("fetch: \(error)")
    }
    server.stop()
    provider.stop()

default:
    fail("usage: HTTPDNSNetnsAgent watch DEBOUNCE_MS | auto DNS_PORT")
}
