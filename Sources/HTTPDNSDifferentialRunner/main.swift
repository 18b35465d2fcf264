import Foundation
import HTTPDNSDifferential
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// HTTPDNSDifferentialRunner --bed BED.json --route plain|protocol --scenario NAME
//
// Runs one differential scenario through one route and prints one line of JSON (a
// DifferentialReport). A test-only tool: the differential suite starts it as a child process, so
// that each scenario has a fresh process (cookie storages, caches, environment such as
// `https_proxy` for the proxy route) and a crash costs one scenario only.

func argument(_ name: String) -> String? {
    guard let index = CommandLine.arguments.firstIndex(of: name), index + 1 < CommandLine.arguments.count else { return nil }
    return CommandLine.arguments[index + 1]
}

func emit(_ report: DifferentialReport) -> Never {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    let line = String(decoding: (try? encoder.encode(report)) ?? Data(), as: UTF8.self)
    print(line)
    fflush(nil)  // every output stream (reading `stdout` is not concurrency-safe)
    // _exit, not exit: sessions still being torn down on other threads would race the exit-time
    // cleanup of OpenSSL inside libcurl (seen under ThreadSanitizer as a crash in SSL_CTX_free).
    _exit(report.failure == nil ? 0 : 1)
}

guard let bedPath = argument("--bed"), let routeName = argument("--route"), let scenarioName = argument("--scenario") else {
    FileHandle.standardError.write(Data("usage: HTTPDNSDifferentialRunner --bed BED.json --route plain|protocol --scenario NAME\n".utf8))
    exit(64)
}

func fail(_ message: String) -> Never {
    emit(DifferentialReport(scenario: scenarioName, route: routeName, result: DifferentialResult(), proof: [:], failure: message))
}

let bed: DifferentialBed
do {
    bed = try JSONDecoder().decode(DifferentialBed.self, from: Data(contentsOf: URL(fileURLWithPath: bedPath)))
} catch {
    fail("cannot read the bed \(bedPath): \(error)")
}
guard let scenario = DifferentialScenarios.named(scenarioName) else { fail("no scenario named \(scenarioName)") }

do {
    // Every route trusts the test CA the way plain URLSession can: the protocol route does not
    // need it (its client trusts the CA file), but the environment is then the same for both.
    try DifferentialTrust.enterPrivateMountNamespace()
    try DifferentialTrust.trust(caPath: bed.caPath, scratch: bed.scratch)
} catch {
    fail("\(error)")
}

let route: any DifferentialRoute
switch routeName {
case "plain": route = PlainRoute()
case "protocol": route = URLProtocolRoute(bed: bed)
default: fail("unknown route \(routeName)")
}

var result: DifferentialResult
do {
    result = try await scenario.run(DifferentialContext(bed: bed, route: route))
} catch {
    result = DifferentialResult()
    result.facts["thrown"] = "\((error as? URLError)?.code.rawValue ?? -1) \(ConcurrentOutcomes.message(of: error))"
}
emit(DifferentialReport(scenario: scenarioName, route: routeName, result: result, proof: route.proof(), failure: nil))
