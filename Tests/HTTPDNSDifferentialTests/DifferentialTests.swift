import Foundation
import HTTPDNSDifferential
import HTTPDNSTestSupport
import XCTest

/// A way to run the scenarios, as the suite sees it: which runner route, with which environment,
/// and what it must give compared with plain `URLSession`.
///
/// A route needing process-wide state gives it in ``environment``; each scenario runs in a child
/// process, so nothing leaks between routes. Route (b), through the proxy, is one more conformer:
/// the test starts the proxy on loopback and the route returns `runnerRoute "plain"` with
/// `https_proxy`/`http_proxy` (credential included) in `environment`.
protocol DifferentialTestRoute: Sendable {
    var name: String { get }
    /// `--route` of the runner.
    var runnerRoute: String { get }
    /// Variables added to the runner's environment.
    var environment: [String: String] { get }
    /// What is wrong with `observed`, this route's result of `scenario`, given plain `URLSession`'s
    /// (`plain`, itself checked against `known`): nothing when it is exactly what the route must
    /// give. By default, equal to plain `URLSession`'s.
    func problems(_ scenario: String, observed: DifferentialResult, plain: DifferentialResult, known: DifferentialKnownValues) -> [String]
    /// The documented rows (the DocC articles' tables) this route's result of `scenario` differs by on purpose (printed).
    func rows(_ scenario: String) -> [String]
}

extension DifferentialTestRoute {
    func problems(_ scenario: String, observed: DifferentialResult, plain: DifferentialResult, known: DifferentialKnownValues) -> [String] {
        Self.unequal(observed, plain)
    }

    func rows(_ scenario: String) -> [String] { [] }

    /// One problem, both results in full, unless they are equal.
    static func unequal(_ observed: DifferentialResult, _ expected: DifferentialResult) -> [String] {
        observed == expected ? [] : ["\n  expected \(expected.canonicalJSON())\n  observed \(observed.canonicalJSON())"]
    }
}

/// (a): plain `URLSession` on the honest network; the expected result.
struct PlainTestRoute: DifferentialTestRoute {
    let name = "(a) plain URLSession"
    let runnerRoute = "plain"
    let environment: [String: String] = [:]
}

/// (c): `URLSession` with ``HTTPDNSURLProtocol`` installed, under a lying LocalDNS: plain
/// `URLSession`'s result changed by its documented rows (``DifferentialExpectations/urlProtocol``).
struct URLProtocolTestRoute: DifferentialTestRoute {
    let name = "(c) URL protocol"
    let runnerRoute = "protocol"
    let environment: [String: String] = [:]

    func problems(_ scenario: String, observed: DifferentialResult, plain: DifferentialResult, known: DifferentialKnownValues) -> [String] {
        var expected = plain
        if let difference = DifferentialExpectations.urlProtocol[scenario] {
            difference.apply(&expected, known)
            if expected == plain { return ["README row \"\(difference.readmeRow)\" changes nothing in plain URLSession's result"] }
        }
        return Self.unequal(observed, expected)
    }

    func rows(_ scenario: String) -> [String] {
        DifferentialExpectations.urlProtocol[scenario].map { [$0.readmeRow] } ?? []
    }
}

/// Issue 8's proof: every scenario through each route equals plain `URLSession`, except the rows of
/// the DocC articles' tables (`ProtectingURLSession.md`, `ProxyRoute.md`), each checked as the exact value it changes (issue 25); plain `URLSession`
/// itself is checked against ``DifferentialKnownValues``.
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
            let note = "differential: bed \(launcher.bedPath), runner \(runner.executable.path), route \(route.runnerRoute) with \(route.environment)\n"
            FileHandle.standardError.write(Data(note.utf8))
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
        if let dump = ProcessInfo.processInfo.environment["HTTPDNS_DIFFERENTIAL_DUMP"] {
            // While updating known values: every report, one canonical line each.
            let lines = reports.value.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value.result.canonicalJSON())" }
            let file = dump + "-" + route.name.filter { $0.isLetter }
            try lines.joined(separator: "\n").write(toFile: file, atomically: true, encoding: .utf8)
        }

        var differing: [String] = []
        let known = DifferentialKnownValues(bed: launcher.bed, nginxVersion: launcher.nginxVersion)
        for scenario in scenarios {
            guard let plain = reports.value["0/\(scenario)"], let observed = reports.value["1/\(scenario)"] else { continue }
            // Plain URLSession first: both routes going wrong alike must fail too.
            if let expected = known.result(scenario) {
                for problem in PlainTestRoute.unequal(plain.result, expected) {
                    XCTFail("\(scenario): plain URLSession differs from its known values\(problem)")
                }
            } else {
                XCTFail("\(scenario): no known values for plain URLSession")
            }
            for problem in route.problems(scenario, observed: observed.result, plain: plain.result, known: known) {
                XCTFail("\(scenario): \(route.name) is not what it must be next to plain URLSession: \(problem)")
            }
            if !route.rows(scenario).isEmpty { differing.append(scenario) }
            if route.runnerRoute == "protocol" {
                let proof = observed.proof
                XCTAssertGreaterThan(proof["httpdnsAnswers", default: 0] + proof["cacheHits", default: 0], 0, "\(scenario): no lookup through HTTPDNS")
                XCTAssertEqual(proof["localDNSAnswers", default: 0], 0, "\(scenario): an answer came from the lying LocalDNS")
            }
        }
        XCTAssertEqual(launcher.hijackCount.withLock { $0 }, 0, "a request reached the hijacker")
        print("differential: \(scenarios.count - differing.count) scenarios equal, differing by README rows: \(differing.sorted())")
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
