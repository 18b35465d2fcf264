import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSNetworking
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// A test helper, not a product: plain `URLSession.shared` code that knows nothing of HTTPDNS, run in
// its own process because the proxy environment it reads is process-wide.
//
//   HTTPDNSURLSessionProbe URL
//       fetches URL with URLSession.shared (whatever http(s)_proxy the environment holds);
//   HTTPDNSURLSessionProbe --start-for-process PROVIDER LOCALDNS_IP:PORT URL
//       first calls HTTPDNSProxy.startForProcess (protecting *.proxied.test), then fetches.
//
// Prints `STATUS <code>` and the body on stdout; exits 1 with the error on stderr.

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("probe: \(message)\n".utf8))
    exit(1)
}

var arguments = Array(CommandLine.arguments.dropFirst())
var proxy: HTTPDNSProxy?
if arguments.first == "--start-for-process" {
    guard arguments.count == 4 else { fail("usage: --start-for-process PROVIDER LOCALDNS_IP:PORT URL") }
    do {
        var configuration = HTTPDNSConfiguration(resolvers: [try HTTPDNSProviderSpec(parsing: arguments[1]).makeResolver()])
        guard let (address, port) = HTTPDNSProviderSpec.parseHostPort(arguments[2]) else { fail("bad LocalDNS \(arguments[2])") }
        configuration.localDNS = .server(address, port: port)
        configuration.hygiene = .init(allowPrivate: true)
        configuration.protectedHosts = HTTPDNSHostPolicy(["*.proxied.test"])
        var proxyConfiguration = HTTPDNSProxy.Configuration()
        proxyConfiguration.allowPrivateTargets = true
        proxy = try HTTPDNSProxy.startForProcess(engine: HTTPDNSEngine(configuration: configuration), configuration: proxyConfiguration)
    } catch {
        fail("cannot start the proxy: \(error)")
    }
    FileHandle.standardError.write(Data("probe: https_proxy=\(ProcessInfo.processInfo.environment["https_proxy"] ?? "")\n".utf8))
    arguments = [arguments[3]]
}
guard arguments.count == 1, let url = URL(string: arguments[0]) else { fail("usage: URL") }
do {
    let (data, response) = try await URLSession.shared.data(from: url)
    let status = (response as? HTTPURLResponse)?.statusCode ?? 0
    FileHandle.standardOutput.write(Data("STATUS \(status)\n".utf8))
    FileHandle.standardOutput.write(data)
} catch {
    fail("\(error)")
}
withExtendedLifetime(proxy) {}
