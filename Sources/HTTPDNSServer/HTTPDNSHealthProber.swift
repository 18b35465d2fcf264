import Foundation
import HTTPDNSCore
import HTTPDNSTransport

/// One probe to run: a check of one address, with the name it sends (SNI, `Host`).
package struct HTTPDNSHealthProbe: Sendable, Hashable {
    package var address: HTTPDNSIPAddress
    package var check: HTTPDNSHealthCheck
    /// The name verified and sent; nil only for `tcp` checks, which send no name.
    package var name: String?

    package init(address: HTTPDNSIPAddress, check: HTTPDNSHealthCheck, name: String?) {
        self.address = address
        self.check = check
        self.name = name
    }
}

/// What one probe found.
package struct HTTPDNSHealthProbeResult: Sendable, Hashable {
    /// Whether the check passed.
    package var passed: Bool
    /// Why it failed, short (for the status endpoint and logs); nil when it passed.
    package var error: String?
    /// The HTTP status received by an `http`/`https` probe that got one.
    package var status: Int?
    /// How long the probe took.
    package var duration: Duration

    package init(passed: Bool, error: String? = nil, status: Int? = nil, duration: Duration = .zero) {
        self.passed = passed
        self.error = error
        self.status = status
        self.duration = duration
    }
}

/// Runs probes (the I/O under ``HTTPDNSHealthMonitor``); tests of the monitor pass their own.
package protocol HTTPDNSHealthProbing: Sendable {
    /// Runs `probe` within its check's timeout; never throws: a failure is a result.
    func probe(_ probe: HTTPDNSHealthProbe) async -> HTTPDNSHealthProbeResult

    /// Starts `probe`: its result when known at once, else what to await for it. The monitor runs
    /// a finished start inline, with no task, and awaits the rest in a task each.
    func begin(_ probe: HTTPDNSHealthProbe) -> HTTPDNSHealthProbeStart
}

/// How a probe started (``HTTPDNSHealthProbing/begin(_:)``).
package enum HTTPDNSHealthProbeStart: Sendable {
    /// The result was known at once (a loopback connect answered within the call).
    case finished(HTTPDNSHealthProbeResult)
    /// Still running: await this for the result.
    case running(@Sendable () async -> HTTPDNSHealthProbeResult)
}

extension HTTPDNSHealthProbing {
    /// Every probe awaited (probers with no fast path).
    package func begin(_ probe: HTTPDNSHealthProbe) -> HTTPDNSHealthProbeStart {
        .running { await self.probe(probe) }
    }
}

/// Probes with the project's libcurl transport, on its own event-loop thread (nothing blocks the
/// cooperative pool): every probe connects afresh to exactly its address (`CURLOPT_CONNECT_TO` and
/// `CURLOPT_RESOLVE` pinning, the name never looked up) and closes the connection afterwards.
///
/// - `tcp`: a non-blocking connect within the timeout, closed once up (``HTTPDNSTCPConnectProber``:
///   one poll thread for every such probe; a libcurl transfer per probe cost ~400 µs of CPU).
/// - `tls`: the same over `https://name:port/`: the gate is reached only after the handshake with
///   SNI = the name and the certificate verified for it (verification cannot be turned off).
/// - `http`/`https`: `GET path` over HTTP/1.1 with `Host` = the name; up when the status is in the
///   expected class. The body is not read: the transfer ends at the response head.
package final class HTTPDNSHealthProber: HTTPDNSHealthProbing {
    private let trust: HTTPDNSTrust
    /// Made at the first probe: a service without checks starts no transport thread.
    private let transport = HTTPDNSLock<HTTPTransport?>(nil)
    /// The `tcp` checks' connects, made at the first: one poll thread, no transfer per probe.
    private let tcp = HTTPDNSLock<HTTPDNSTCPConnectProber?>(nil)

    /// - Parameter trust: the CAs that verify `tls` and `https` checks.
    package init(trust: HTTPDNSTrust) {
        self.trust = trust
    }

    private var sharedTransport: HTTPTransport {
        transport.withLock { transport in
            if let transport { return transport }
            var configuration = HTTPTransport.Configuration()
            // The monitor bounds probes in flight; libcurl must not queue them behind its own limit
            // (a queued transfer would spend its timeout waiting).
            configuration.maxConnectionsPerHost = 0
            configuration.enableHTTP2 = false
            configuration.userAgent = "swift-httpdns-health"
            let made = HTTPTransport(configuration: configuration)
            transport = made
            return made
        }
    }

    package func probe(_ probe: HTTPDNSHealthProbe) async -> HTTPDNSHealthProbeResult {
        switch begin(probe) {
        case .finished(let result): return result
        case .running(let rest): return await rest()
        }
    }

    /// A `tcp` probe's connect starts here, and most on loopback end here: no task, no thread.
    package func begin(_ probe: HTTPDNSHealthProbe) -> HTTPDNSHealthProbeStart {
        let started = ContinuousClock.now
        guard probe.check.kind == .tcp else {
            return .running {
                var result = await self.run(probe)
                result.duration = ContinuousClock.now - started
                return result
            }
        }
        @Sendable func result(_ error: String?) -> HTTPDNSHealthProbeResult {
            HTTPDNSHealthProbeResult(passed: error == nil, error: error.map { "connect: \($0)" }, duration: ContinuousClock.now - started)
        }
        switch HTTPDNSTCPConnectProber.begin(address: probe.address, port: probe.check.port) {
        case .finished(let error):
            return .finished(result(error))
        case .connecting(let fd):
            let timeout = probe.check.timeout
            return .running { result(await self.tcpProber.wait(fd, timeout: timeout)) }
        }
    }

    deinit {
        tcp.withLock { $0 }?.stop()
    }

    private var tcpProber: HTTPDNSTCPConnectProber {
        tcp.withLock { tcp in
            if let tcp { return tcp }
            let made = HTTPDNSTCPConnectProber()
            tcp = made
            return made
        }
    }

    private func run(_ probe: HTTPDNSHealthProbe) async -> HTTPDNSHealthProbeResult {
        let check = probe.check
        let kind = check.kind
        guard let name = probe.name ?? (kind.needsName ? nil : probe.address.uriText) else {
            return HTTPDNSHealthProbeResult(passed: false, error: "no name to verify")
        }
        let scheme = kind.usesTLS ? "https" : "http"
        let path = kind.sendsRequest ? check.path : "/"
        guard let url = URL(string: "\(scheme)://\(name):\(check.port)\(path)") else {
            return HTTPDNSHealthProbeResult(passed: false, error: "cannot make a URL")
        }
        var request = HTTPTransportRequest(url: url, pinnedAddresses: [probe.address], trust: trust)
        request.timeouts = .init(connect: check.timeout, total: check.timeout, idle: nil)
        request.freshConnection = true
        let transport = sharedTransport
        if kind.sendsRequest {
            let (status, error) = await Self.head(of: request, on: transport)
            guard let status else {
                return HTTPDNSHealthProbeResult(passed: false, error: error.map(Self.describe) ?? "no response")
            }
            guard status / 100 == check.expect else {
                return HTTPDNSHealthProbeResult(passed: false, error: "status \(status), expected \(check.expect)xx", status: status)
            }
            return HTTPDNSHealthProbeResult(passed: true, status: status)
        }
        let reached = HTTPDNSLock(false)
        request.connectGate = { _ in
            reached.withLock { $0 = true }
            return false
        }
        do {
            _ = try await transport.send(request)
            return HTTPDNSHealthProbeResult(passed: false, error: "the connection was not stopped before the request")
        } catch {
            if reached.withLock({ $0 }) { return HTTPDNSHealthProbeResult(passed: true) }
            return HTTPDNSHealthProbeResult(passed: false, error: Self.describe(error))
        }
    }

    /// The status of `request`'s response head, or the error that came first. The transfer is
    /// cancelled at the head and this returns once libcurl has let go of it (its connection
    /// closed), so that probes in flight and connections open are the same count.
    private static func head(of request: HTTPTransportRequest, on transport: HTTPTransport) async -> (Int?, HTTPTransportError?) {
        let catcher = HeadCatcher()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                catcher.wait(continuation)
                do throws(HTTPTransportError) {
                    catcher.started(try transport.start(request, delegate: catcher))
                } catch {
                    catcher.didComplete(.failure(error))
                }
            }
        } onCancel: {
            catcher.cancel()
        }
    }

    /// The error as a short line: its code and libcurl's words, at most 200 characters.
    static func describe(_ error: HTTPTransportError) -> String {
        let text = error.detail.isEmpty ? "\(error.code)" : "\(error.code): \(error.detail)"
        return String(text.unicodeScalars.prefix(200).map { $0.isASCII && $0.value >= 0x20 ? Character($0) : "?" })
    }
}

/// Keeps the status of a response head, cancels the transfer there, and reports once it completed.
private final class HeadCatcher: HTTPTransportDelegate {
    private struct State {
        var status: Int?
        var task: HTTPTransportTask?
        var cancelled = false
        var continuation: CheckedContinuation<(Int?, HTTPTransportError?), Never>?
        var outcome: (Int?, HTTPTransportError?)?
    }

    private let state = HTTPDNSLock(State())

    func wait(_ continuation: CheckedContinuation<(Int?, HTTPTransportError?), Never>) {
        let outcome = state.withLock { state in
            if state.outcome == nil { state.continuation = continuation }
            return state.outcome
        }
        if let outcome { continuation.resume(returning: outcome) }
    }

    func started(_ task: HTTPTransportTask) {
        let cancelNow = state.withLock { state in
            state.task = task
            return state.cancelled
        }
        if cancelNow { task.cancel() }
    }

    func cancel() {
        state.withLock { state in
            state.cancelled = true
            return state.task
        }?.cancel()
    }

    func didReceiveResponse(_ head: HTTPTransportResponseHead) {
        state.withLock { state in
            state.status = head.statusCode
            state.cancelled = true
            return state.task
        }?.cancel()
    }

    func didReceiveData(_ data: Data) {}

    func didComplete(_ result: Result<HTTPTransportMetrics, HTTPTransportError>) {
        let error: HTTPTransportError? = if case .failure(let failure) = result { failure } else { nil }
        let (continuation, outcome) = state.withLock { state in
            let outcome = (state.status, state.status == nil ? error : nil)
            state.outcome = outcome
            defer { state.continuation = nil }
            return (state.continuation, outcome)
        }
        continuation?.resume(returning: outcome)
    }
}
