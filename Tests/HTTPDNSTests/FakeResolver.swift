import Dispatch
import HTTPDNS
import HTTPDNSCore
import HTTPDNSTestSupport

/// A resolver whose answers, failures and delays the test scripts; counts its calls.
final class FakeResolver: HTTPDNSResolver {
    enum Behaviour: Sendable {
        case answer([String], ttl: Int?)
        case fail(HTTPDNSError.Code)
        case hang
    }

    let name: String
    /// When set, every lookup waits here before it answers (after it is counted in ``calls``).
    private let gate: TestGate?
    private let state: HTTPDNSLock<(behaviour: Behaviour, calls: Int, delay: Double, inFlight: Int, mostInFlight: Int)>

    init(_ name: String, _ behaviour: Behaviour, delay: Double = 0, gate: TestGate? = nil) {
        self.name = name
        self.gate = gate
        self.state = HTTPDNSLock((behaviour, 0, delay, 0, 0))
    }

    var calls: Int { state.withLock { $0.calls } }
    /// The most lookups that were running at once.
    var mostInFlight: Int { state.withLock { $0.mostInFlight } }

    func set(_ behaviour: Behaviour) {
        state.withLock { $0.behaviour = behaviour }
    }

    func resolve(_ host: String, family: HTTPDNSAddressFamily) async throws -> HTTPDNSRecordSet {
        let (behaviour, delay) = state.withLock { state -> (Behaviour, Double) in
            state.calls += 1
            state.inFlight += 1
            state.mostInFlight = max(state.mostInFlight, state.inFlight)
            return (state.behaviour, state.delay)
        }
        defer { state.withLock { $0.inFlight -= 1 } }
        if let gate { await gate.wait() }
        if delay > 0 { try await Task.sleep(for: .seconds(delay)) }
        switch behaviour {
        case .answer(let texts, let ttl):
            let addresses = texts.compactMap(HTTPDNSIPAddress.init)
            return HTTPDNSRecordSet(
                host: host, ipv4: addresses.filter { $0.family == .v4 }, ipv6: addresses.filter { $0.family == .v6 },
                ttl: ttl)
        case .fail(let code):
            throw HTTPDNSError(code, "scripted failure", host: host, source: name)
        case .hang:
            // Suspends for 30 s ignoring cancellation on purpose: the engine must still return on time.
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                DispatchQueue.global().asyncAfter(deadline: .now() + 30) { continuation.resume() }
            }
            throw HTTPDNSError(.timedOut, "hung", host: host, source: name)
        }
    }
}

/// Collects events for assertions.
final class RecordingMonitor: HTTPDNSEventMonitor {
    private let log = HTTPDNSLock<[String]>([])

    var events: [String] { log.withLock { $0 } }

    private func add(_ event: String) { log.withLock { $0.append(event) } }

    func cacheHit(host: String, family: HTTPDNSAddressFamily) { add("hit \(host)") }
    func cacheServedStale(host: String, family: HTTPDNSAddressFamily) { add("stale \(host)") }
    func cacheRefreshed(host: String, family: HTTPDNSAddressFamily) { add("refreshed \(host)") }
    func resolverFailed(resolver: String, host: String, error: HTTPDNSError) { add("failed \(resolver) \(error.code)") }
    func fellBackToLocalDNS(host: String) { add("local \(host)") }
    func warning(_ message: String) { add("warning \(message)") }
}

func engine(
    _ providers: [any HTTPDNSResolver],
    local: (any HTTPDNSResolver)? = nil,
    clock: HTTPDNSManualClock = HTTPDNSManualClock(),
    monitor: RecordingMonitor = RecordingMonitor(),
    configure: (inout HTTPDNSConfiguration) -> Void = { _ in }
) -> HTTPDNSEngine {
    var configuration = HTTPDNSConfiguration(resolvers: providers)
    configuration.clock = clock
    configuration.monitor = monitor
    configuration.localDNS = .custom(local ?? FakeResolver("local", .fail(.nameNotFound)))
    configure(&configuration)
    return HTTPDNSEngine(configuration: configuration)
}
