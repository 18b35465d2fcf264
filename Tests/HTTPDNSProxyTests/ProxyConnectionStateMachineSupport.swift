import Foundation
import HTTPDNSCore
@testable import HTTPDNSLoopbackProxy
import HTTPDNSTransport
import XCTest

typealias Machine = ProxyConnectionStateMachine

/// Builds machines and feeds them events without sockets; times are plain nanosecond counts.
enum MachineFixture {
    static let client: Int32 = 7
    static let upstream = Machine.Upstream(socket: 9, token: 42)
    static let accepted: UInt64 = 1_000
    static let headTimeout: UInt64 = 10_000
    static let idleTimeout: UInt64 = 50_000
    static let connectTimeout: UInt64 = 3_000
    static let drainQuiet: UInt64 = 2_000
    static let credential = "Proxy-Authorization: Basic dTpw\r\n"  // u:p
    static let publicAddress = HTTPDNSIPAddress("93.184.216.34")!
    static let otherAddress = HTTPDNSIPAddress("93.184.216.35")!

    static func machine(credential: Bool = true) -> Machine {
        let rules = ProxyConnectionRules(
            token: credential ? Array(Data("u:p".utf8).base64EncodedString().utf8) : nil,
            policy: ProxyTargetPolicy(allowPrivate: false, listeners: []), headTimeout: headTimeout, idleTimeout: idleTimeout,
            connectTimeout: connectTimeout, drainQuietTime: drainQuiet)
        return Machine(client: client, acceptedAt: accepted, rules: rules)
    }

    static func connect(_ target: String, extra: String = "") -> String {
        "CONNECT \(target) HTTP/1.1\r\nHost: \(target)\r\n\(credential)\r\n\(extra)"
    }

    static func forward(_ url: String) -> String {
        "GET \(url) HTTP/1.1\r\nAccept: */*\r\n\(credential)\r\n"
    }

    /// Feeds `text` as one read; `cached` answers names for the fast path.
    static func read(
        _ machine: inout Machine, _ text: String, short: Bool = true, now: UInt64 = accepted + 1,
        cached: HTTPDNSIPAddress? = nil
    ) -> Machine.Action {
        _ = machine.clientEvent(.init(readable: true))
        return Array(text.utf8).withUnsafeBytes { machine.headBytesRead($0, short: short, now: now, cachedAddress: { _ in cached }) }
    }

    /// A machine in `relaying`: the tunnel (or forwarded request) connected on the fast path.
    static func relaying(_ text: String = connect("93.184.216.34:443"), now: UInt64 = accepted + 1) -> Machine {
        var machine = machine()
        guard case .connect(let plan) = read(&machine, text, now: now) else {
            XCTFail("no connect")
            return machine
        }
        _ = machine.attemptStarted(plan, .connected(upstream), now: now)
        return machine
    }
}

/// Looks into actions and states (closures keep them from being Equatable).
extension Machine.Action {
    var isNone: Bool {
        if case .none = self { return true }
        return false
    }

    var isReadHead: Bool {
        if case .readHead = self { return true }
        return false
    }


    var isDrain: Bool {
        if case .drain = self { return true }
        return false
    }

    var plan: Machine.AttemptPlan? {
        if case .connect(let plan) = self { return plan }
        return nil
    }

    var response: Machine.Response? {
        if case .respond(let response) = self { return response }
        return nil
    }

    /// What a `.close` lets go of.
    var closing: Machine.Release? {
        if case .close(let release) = self { return release }
        return nil
    }

    var opened: (Machine.Opened, Machine.Deliver?)? {
        if case .startRelay(let opened, let deliver) = self { return (opened, deliver) }
        return nil
    }

    var watched: (client: Machine.Interest?, upstream: (Machine.Upstream, Machine.Interest)?)? {
        if case .watch(let client, let upstream) = self { return (client, upstream) }
        return nil
    }
}

extension Machine {
    /// An edge whose relay run (while relaying) moves nothing.
    mutating func clientEvent(_ edges: Edges) -> Action {
        clientEvent(edges, now: MachineFixture.accepted) { _, _ in false }
    }

    /// An upstream edge whose relay run (while relaying) moves nothing.
    mutating func upstreamEvent(_ edges: Edges, now: UInt64) -> Action {
        upstreamEvent(edges, now: now) { _, _ in false }
    }

    var relaying: Relaying? {
        if case .relaying(let box) = state { return box.relaying }
        return nil
    }

    var connecting: Connecting? {
        if case .connecting(let box) = state { return box.connecting }
        return nil
    }

    var draining: Draining? {
        if case .draining(let draining) = state { return draining }
        return nil
    }

    var isReadingHead: Bool {
        if case .readingHead = state { return true }
        return false
    }

    var reply: String {
        draining.map { String(decoding: $0.reply, as: UTF8.self) } ?? ""
    }
}

/// Records what a connector hears.
final class DeliveryRecorder {
    var results: [ProxyConnector.AttemptResult] = []

    var deliver: Machine.Deliver { { self.results.append($0) } }

    var lastError: HTTPTransportError? {
        if case .failed(let error) = results.last { return error }
        return nil
    }

    var lastIsConnected: Bool {
        if case .connected = results.last { return true }
        return false
    }

    var lastIsGone: Bool {
        if case .gone = results.last { return true }
        return false
    }
}
