import Foundation
import HTTPDNSDifferential
import HTTPDNSTestSupport
import XCTest

/// A way to run the scenarios, as the suite sees it: which runner route, with which environment,
/// and which scenarios differ from plain `URLSession` on purpose.
///
/// A route needing process-wide state gives it in ``environment``; each scenario runs in a child
/// process, so nothing leaks between routes. Route (b), through the proxy, is one more conformer:
/// the test starts the proxy on loopback (engine: ``DifferentialBed/providerSpec`` as HTTPDNS, the
/// bed's dnsmasq as LocalDNS, loopback targets allowed), and the route returns `runnerRoute
/// "plain"` with `https_proxy`/`http_proxy` (credential included) in `environment` and no expected
/// differences; then `try compare(ProxyTestRoute(...))`.
protocol DifferentialTestRoute: Sendable {
    var name: String { get }
    /// `--route` of the runner.
    var runnerRoute: String { get }
    /// Variables added to the runner's environment.
    var environment: [String: String] { get }
    /// Scenario name → the README row ("URLProtocol route: corelibs limits") explaining the difference.
    var expectedDifferences: [String: String] { get }
    /// Scenario name → an open defect outside this package that may make the scenario differ, with
    /// the only outcome it may differ by (``DifferentialExpectations/OpenDefect``).
    var openDefects: [String: DifferentialExpectations.OpenDefect] { get }
}

extension DifferentialTestRoute {
    var openDefects: [String: DifferentialExpectations.OpenDefect] { [:] }
}

/// (a): plain `URLSession` on the honest network; the expected result.
struct PlainTestRoute: DifferentialTestRoute {
    let name = "(a) plain URLSession"
    let runnerRoute = "plain"
    let environment: [String: String] = [:]
    let expectedDifferences: [String: String] = [:]
}

/// (c): `URLSession` with ``HTTPDNSURLProtocol`` installed, under a lying LocalDNS.
struct URLProtocolTestRoute: DifferentialTestRoute {
    let name = "(c) URL protocol"
    let runnerRoute = "protocol"
    let environment: [String: String] = [:]
    let expectedDifferences: [String: String] = DifferentialExpectations.urlProtocol
}

/// Issue 8's proof: every scenario through each route equals plain `URLSession`, except the rows of
/// the README table, named per scenario.
final class DifferentialTests: XCTestCase {
    func testTheURLProtocolRouteBehavesAsPlainURLSession() throws {
        try compare(URLProtocolTestRoute())
    }

    /// Runs every scenario on (a) and on `route`, two children at a time, and compares; on
    /// `launcher`'s bed when given (a route that needs the bed before it starts), else on a new one.
    func compare(_ route: some DifferentialTestRoute, launcher given: DifferentialBedLauncher? = nil) throws {
        let launcher = try given ?? DifferentialBedLauncher()
        defer { if given == nil { launcher.stop() } }
        let runner = try ToolRunner(executable: Self.locateRunner())
        if let hold = ProcessInfo.processInfo.environment["HTTPDNS_DIFFERENTIAL_HOLD"].flatMap(Double.init) {
            // While working on a scenario: keep the bed up and run the runner by hand against it.
            print("differential: bed \(launcher.bedPath), runner \(runner.executable.path)")
            Thread.sleep(forTimeInterval: hold)
        }
        // HTTPDNS_DIFFERENTIAL_SCENARIOS=get,head runs only those (while working on one).
        let only = ProcessInfo.processInfo.environment["HTTPDNS_DIFFERENTIAL_SCENARIOS"].map { Set($0.split(separator: ",").map(String.init)) }
        let scenarios = DifferentialScenarios.all.map(\.name).filter { only?.contains($0) ?? true }
        let routes: [any DifferentialTestRoute] = [PlainTestRoute(), route]
        let jobs = scenarios.flatMap { scenario in routes.indices.map { (scenario, $0) } }
        let reports = HTTPDNSLockBox<[String: DifferentialReport]>([:])
        let failures = HTTPDNSLockBox<[String]>([])
        DispatchQueue.concurrentPerform(iterations: jobs.count) { index in
            let (scenario, routeIndex) = jobs[index]
            let route = routes[routeIndex]
            do {
                let started = ContinuousClock.now
                let report = try Self.run(scenario, route: route, launcher: launcher, runner: runner)
                print("differential: \(scenario) via \(route.runnerRoute) in \(ContinuousClock.now - started)")
                reports.update { $0["\(routeIndex)/\(scenario)"] = report }
            } catch {
                failures.update { $0.append("\(route.name) \(scenario): \(error)") }
            }
        }
        for failure in failures.value { XCTFail(failure) }

        var differing: [String] = []
        for scenario in scenarios {
            guard let expected = reports.value["0/\(scenario)"], let actual = reports.value["1/\(scenario)"] else { continue }
            let same = expected.result == actual.result
            if let defect = route.openDefects[scenario], !same {
                // Tolerated only with the defect's own signature; anything else still fails.
                XCTAssertEqual(
                    actual.result.facts[defect.fact], defect.value,
                    "\(scenario): differs, and not only by the open defect \"\(defect.readmeRow)\": \(actual.result.canonicalJSON())")
                differing.append(scenario)
                continue
            }
            if let row = route.expectedDifferences[scenario] {
                XCTAssertFalse(same, "\(scenario): listed as an expected difference (README row \"\(row)\") but equal now: drop the row")
                differing.append(scenario)
                continue
            }
            XCTAssertTrue(same, """
                \(scenario): \(route.name) differs from plain URLSession
                  (a) \(expected.result.canonicalJSON())
                  (c) \(actual.result.canonicalJSON())
                """)
            if route.runnerRoute == "protocol" {
                let proof = actual.proof
                XCTAssertGreaterThan(proof["httpdnsAnswers", default: 0] + proof["cacheHits", default: 0], 0, "\(scenario): no lookup through HTTPDNS")
                XCTAssertEqual(proof["localDNSAnswers", default: 0], 0, "\(scenario): an answer came from the lying LocalDNS")
            }
        }
        XCTAssertEqual(launcher.hijackCount.withLock { $0 }, 0, "a request reached the hijacker")
        print("differential: \(scenarios.count - differing.count) scenarios equal, expected differences: \(differing.sorted())")
    }

    /// One scenario through one route in a child process.
    static func run(
        _ scenario: String, route: any DifferentialTestRoute, launcher: DifferentialBedLauncher, runner: ToolRunner
    ) throws -> DifferentialReport {
        let environment = ProcessInfo.processInfo.environment.merging(route.environment) { $1 }
        let result = try runner.run(
            ["--bed", launcher.bedPath, "--route", route.runnerRoute, "--scenario", scenario],
            timeout: .seconds(60), environment: environment)
        guard let line = result.stdoutLines.last,
              let report = try? JSONDecoder().decode(DifferentialReport.self, from: Data(line.utf8))
        else {
            throw DifferentialFailure("exit \(result.status), no report; stderr: \(result.stderrText.suffix(2000))")
        }
        if let failure = report.failure { throw DifferentialFailure(failure) }
        // A sanitizer finding in the child (make test-tsan) is a failure of the scenario.
        guard result.status == 0, !result.stderrText.contains("ThreadSanitizer") else {
            throw DifferentialFailure("exit \(result.status) after its report; stderr: \(result.stderrText.suffix(4000))")
        }
        return report
    }

    /// The runner binary, next to the test bundle (SwiftPM builds every executable target there).
    static func locateRunner() throws -> URL {
        let name = "HTTPDNSDifferentialRunner"
        var candidates = [URL(fileURLWithPath: CommandLine.arguments.first ?? "").deletingLastPathComponent().appendingPathComponent(name)]
        for bundle in [Bundle.main] + Bundle.allBundles {
            candidates.append(bundle.bundleURL.deletingLastPathComponent().appendingPathComponent(name))
        }
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) else {
            throw DifferentialFailure("\(name) not built (swift build builds it); looked at \(candidates.map(\.path))")
        }
        return found
    }
}

/// A value behind a lock, for the worker threads of `concurrentPerform`.
final class HTTPDNSLockBox<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: Value
    init(_ value: Value) { storage = value }
    var value: Value { lock.withLock { storage } }
    func update(_ change: (inout Value) -> Void) { lock.withLock { change(&storage) } }
}
