import Foundation
import HTTPDNSCore
@testable import HTTPDNSLoopbackProxy
import HTTPDNSTransport
import XCTest

/// The connection's state machine without sockets: reading the head, authorising, connecting
/// (fast path and connector), each with its deadline, failures and the proxy stopping.
final class ProxyConnectionStateMachineTests: XCTestCase {
    typealias F = MachineFixture

    // MARK: - Reading the head

    func testAClientEdgeAsksForTheHeadToBeRead() {
        var machine = F.machine()
        XCTAssertNil(machine.headRoom(scratch: 65_536), "nothing said readable yet")
        XCTAssertTrue(machine.clientEvent(.init(writable: true)).isReadHead)
        XCTAssertNil(machine.headRoom(scratch: 65_536))
        XCTAssertTrue(machine.clientEvent(.init(readable: true)).isReadHead)
        XCTAssertEqual(machine.headRoom(scratch: 65_536), ProxyRequestHead.maximumBytes + 1)
        XCTAssertEqual(machine.headRoom(scratch: 100), 100)
        machine.headDrained()
        XCTAssertNil(machine.headRoom(scratch: 65_536))
        XCTAssertTrue(machine.upstreamEvent(.init(readable: true, writable: true), now: F.accepted).isNone)
    }

    func testALiteralTargetIsConnectedOnTheFastPathWithTheBytesAfterTheHeadKept() throws {
        var machine = F.machine()
        var asked = 0
        let action = Array(F.connect("93.184.216.34:443", extra: "\u{16}\u{03}\u{01}").utf8).withUnsafeBytes {
            machine.headBytesRead($0, short: true, now: 2_000) { _ in
                asked += 1
                return nil
            }
        }
        let plan = try XCTUnwrap(action.plan)
        XCTAssertEqual(plan.address, F.publicAddress)
        XCTAssertEqual(plan.port, 443)
        XCTAssertEqual(plan.number, 1)
        XCTAssertEqual(plan.deadline, 2_000 + F.connectTimeout)
        guard case .fastPath = plan.owner else { return XCTFail("\(plan.owner)") }
        XCTAssertEqual(asked, 0, "a literal needs no cache look")
        let connecting = try XCTUnwrap(machine.connecting)
        XCTAssertEqual(connecting.request.leftover, [0x16, 0x03, 0x01])
        XCTAssertEqual(connecting.request.literal, F.publicAddress)
        XCTAssertNil(connecting.attempt, "the attempt exists once its socket does")
        XCTAssertTrue(machine.isConnecting)
        XCTAssertFalse(machine.isAttempting)
    }

    func testANameWithACachedAnswerTakesTheFastPathAndOneWithoutGoesToTheConnector() throws {
        var cached = F.machine()
        let plan = try XCTUnwrap(F.read(&cached, F.connect("www.example.com:443"), cached: F.otherAddress).plan)
        XCTAssertEqual(plan.address, F.otherAddress)
        XCTAssertNil(cached.connecting?.request.literal)

        var uncached = F.machine()
        guard case .startConnector(let host, let port, let cooling, let closing) = F.read(&uncached, F.connect("www.example.com:443")) else {
            return XCTFail("no connector")
        }
        XCTAssertEqual(host, "www.example.com")
        XCTAssertEqual(port, 443)
        XCTAssertNil(cooling)
        XCTAssertNil(closing)
        XCTAssertTrue(uncached.isConnecting)
    }

    /// Every truncation of a head, one byte per read: nothing happens until the last byte.
    func testAHeadInPiecesIsBufferedUntilComplete() throws {
        let text = Array(F.connect("93.184.216.34:443", extra: "AB").utf8)
        var machine = F.machine()
        for index in text.indices.dropLast(3) {
            XCTAssertEqual(machine.headRoom(scratch: 65_536), nil, "a short read drained the socket")
            _ = machine.clientEvent(.init(readable: true))
            XCTAssertEqual(machine.headRoom(scratch: 65_536), ProxyRequestHead.maximumBytes + 1 - index)
            let action = [text[index]].withUnsafeBytes { machine.headBytesRead($0, short: true, now: 2_000) { _ in nil } }
            XCTAssertTrue(action.isNone, "byte \(index)")
            XCTAssertTrue(machine.isReadingHead)
        }
        _ = machine.clientEvent(.init(readable: true))
        let rest = Array(text.suffix(3))
        let plan = try XCTUnwrap(rest.withUnsafeBytes { machine.headBytesRead($0, short: true, now: 2_000) { _ in nil } }.plan)
        XCTAssertEqual(plan.address, F.publicAddress)
        XCTAssertEqual(machine.connecting?.request.leftover, Array("AB".utf8))
    }

    func testAShortReadFromAClientThatClosedKeepsReading() {
        var machine = F.machine()
        _ = machine.clientEvent(.init(readable: true, hungUp: true))
        _ = F.read(&machine, "CONNECT 93.184", short: true)
        XCTAssertNotNil(machine.headRoom(scratch: 65_536), "the end is still to be read")
        _ = F.read(&machine, ".216.34:443 HTTP/1.1\r\n", short: false)
        XCTAssertNotNil(machine.headRoom(scratch: 65_536))
    }

    func testMalformedAndOversizedHeadsAreRefusedAndDrained() throws {
        for (text, status) in [("GET / HTTP/1.1\r\nHost: x\r\n\r\n", 400), ("CONNECT a.test:443 HTTP/1.1\nHost: x\n\n", 400),
                               ("GET https://a.test/ HTTP/1.1\r\n\r\n", 501), ("CONNECT a.test:443 HTTP/2.0\r\n\r\n", 505),
                               ("CONNECT a.test:443 HTTP/1.1\r\nX: " + String(repeating: "a", count: 20_000), 431)] {
            var machine = F.machine()
            let response = try XCTUnwrap(F.read(&machine, text, now: 5_000).response, text)
            XCTAssertEqual(response.status, status)
            XCTAssertTrue(response.drain)
            guard case .refused(status, let reason) = response.report else { return XCTFail("\(response.report)") }
            XCTAssertTrue(reason.contains(":"), "the monitor hears the error's code and detail: \(reason)")
            XCTAssertTrue(machine.reply.hasPrefix("HTTP/1.1 \(status) "), machine.reply)
            XCTAssertTrue(machine.reply.contains("\r\nConnection: close\r\n"))
            XCTAssertEqual(machine.draining?.deadline, 5_000 + ProxyConnectionRules.drainTime)
        }
    }

    func testAMissingOrWrongCredentialIsRefusedWith407() throws {
        for field in ["", "Proxy-Authorization: Basic dTpx\r\n", "Proxy-Authorization: Bearer dTpw\r\n"] {
            var machine = F.machine()
            let response = try XCTUnwrap(F.read(&machine, "CONNECT 93.184.216.34:443 HTTP/1.1\r\n\(field)\r\n").response)
            XCTAssertEqual(response.status, 407)
            XCTAssertEqual(response.report, .refused(status: 407, reason: "missing or wrong proxy credential"))
            XCTAssertTrue(machine.reply.contains("\r\nProxy-Authenticate: Basic realm=\"httpdns\"\r\n"), machine.reply)
            XCTAssertTrue(machine.reply.hasSuffix("httpdns proxy: proxy credential required\n"))
        }
        var open = F.machine(credential: false)
        XCTAssertNotNil(F.read(&open, "CONNECT 93.184.216.34:443 HTTP/1.1\r\n\r\n").plan)
    }

    func testAForbiddenLiteralIsAnswered403AsAFailedTunnel() throws {
        for target in ["127.0.0.1:443", "[::1]:443", "10.1.2.3:443", "0.0.0.0:443"] {
            var machine = F.machine()
            let response = try XCTUnwrap(F.read(&machine, F.connect(target)).response, target)
            XCTAssertEqual(response.status, 403)
            let host = target.hasPrefix("[") ? "::1" : String(target.prefix { $0 != ":" })
            XCTAssertEqual(response.report, .tunnelFailed(host: host, port: 443, status: 403, reason: "target forbidden by the proxy's policy"))
            XCTAssertNotNil(machine.draining)
        }
    }

    func testTheHeadDeadlineAnswers408WithoutDrainingThenCloses() throws {
        var machine = F.machine()
        _ = F.read(&machine, "CONNECT www.exa")
        XCTAssertTrue(machine.checkDeadlines(now: F.accepted + F.headTimeout).isNone)
        let response = try XCTUnwrap(machine.checkDeadlines(now: F.accepted + F.headTimeout + 1).response)
        XCTAssertEqual(response.status, 408)
        XCTAssertFalse(response.drain)
        XCTAssertEqual(response.report, .refused(status: 408, reason: "no complete request head in time"))
        XCTAssertTrue(machine.unsentReply.map { String(decoding: $0, as: UTF8.self) }?.hasPrefix("HTTP/1.1 408 ") ?? false)
        let release = try XCTUnwrap(machine.replyFlushed().closing)
        XCTAssertNil(release.upstream)
        XCTAssertTrue(machine.isClosed)
    }

    func testAClientThatGoesOrAStopWhileReadingTheHeadCloses() throws {
        var gone = F.machine()
        _ = F.read(&gone, "CONNECT ")
        let release = try XCTUnwrap(gone.clientHungUp().closing)
        XCTAssertNil(release.upstream)
        XCTAssertNil(release.tunnel)
        XCTAssertTrue(gone.isClosed)

        var stopped = F.machine()
        XCTAssertNotNil(stopped.proxyStopped().closing)
        XCTAssertTrue(stopped.proxyStopped().isNone, "closed once")
    }

    func testARefusedClientIsClosedAtOnce() {
        var machine = F.machine()
        machine.refusedAtAdmission()
        XCTAssertTrue(machine.isClosed)
    }

    // MARK: - Connecting: the fast path

    func testTheFastPathsAttemptConnectsOnItsWritableEdge() throws {
        var machine = F.machine()
        let plan = try XCTUnwrap(F.read(&machine, F.connect("93.184.216.34:443", extra: "hello")).plan)
        XCTAssertTrue(machine.attemptStarted(plan, .inProgress(F.upstream), now: 2_000).isNone)
        XCTAssertTrue(machine.isAttempting)
        // The client's edges while connecting are kept for the pump; the upstream's too.
        XCTAssertTrue(machine.clientEvent(.init(readable: true, hungUp: true)).isNone)
        XCTAssertTrue(machine.upstreamEvent(.init(readable: true), now: 2_000).isNone)
        let (opened, deliver) = try XCTUnwrap(machine.upstreamEvent(.init(writable: true), now: 2_100).opened)
        XCTAssertEqual(opened, Machine.Opened(host: "93.184.216.34", port: 443, address: F.publicAddress, attempts: 1))
        XCTAssertNil(deliver, "the fast path tells no connector")
        let relaying = try XCTUnwrap(machine.relaying)
        XCTAssertEqual(relaying.upstream, F.upstream)
        XCTAssertEqual(relaying.lastActivity, F.accepted, "idleness counts from the accept until a byte moves")
        XCTAssertEqual(relaying.toServer.source, F.client)
        XCTAssertEqual(relaying.toServer.destination, F.upstream.socket)
        XCTAssertEqual(relaying.toServer.pending, Array("hello".utf8))
        XCTAssertTrue(relaying.toServer.sourceReadable)
        XCTAssertTrue(relaying.toServer.sourceHungUp)
        XCTAssertEqual(relaying.toClient.pending, Array("HTTP/1.1 200 Connection established\r\n\r\n".utf8))
        XCTAssertTrue(relaying.toClient.sourceReadable)
        XCTAssertFalse(relaying.toClient.sourceHungUp)
        XCTAssertFalse(relaying.toClient.scanning)
    }

    func testAForwardedRequestSendsItsRewrittenHeadAndScansTheResponse() throws {
        var machine = F.machine()
        let plan = try XCTUnwrap(F.read(&machine, F.forward("http://93.184.216.34:8080/a?b") + "body").plan)
        XCTAssertEqual(plan.port, 8080)
        XCTAssertNotNil(machine.attemptStarted(plan, .connected(F.upstream), now: 2_000).opened, "connected at once")
        let relaying = try XCTUnwrap(machine.relaying)
        XCTAssertEqual(
            String(decoding: relaying.toServer.pending, as: UTF8.self),
            "GET /a?b HTTP/1.1\r\nHost: 93.184.216.34:8080\r\nAccept: */*\r\nConnection: close\r\n\r\nbody")
        XCTAssertTrue(relaying.toClient.pending.isEmpty)
        XCTAssertTrue(relaying.toClient.scanning)
        XCTAssertTrue(relaying.forwarding)
    }

    func testALiteralsRefusedAttemptIsAnswered502AndItsSocketClosed() throws {
        var machine = F.machine()
        let plan = try XCTUnwrap(F.read(&machine, F.connect("93.184.216.34:443")).plan)
        _ = machine.attemptStarted(plan, .inProgress(F.upstream), now: 2_000)
        guard case .readConnectError(let socket) = machine.upstreamEvent(.init(readable: true, writable: true, hungUp: true, failed: true), now: 2_000) else {
            return XCTFail("the pending error is read first")
        }
        XCTAssertEqual(socket, F.upstream.socket)
        let response = try XCTUnwrap(machine.attemptFailed(.cannotConnectToHost, "Connection refused", now: 2_100).response)
        XCTAssertEqual(response.status, 502)
        XCTAssertEqual(response.release.upstream, F.upstream)
        XCTAssertEqual(response.failedAddress?.address, F.publicAddress)
        XCTAssertEqual(response.failedAddress?.error.code, .cannotConnectToHost)
        XCTAssertEqual(response.failedAddress?.error.host, "93.184.216.34")
        XCTAssertEqual(
            response.report, .tunnelFailed(host: "93.184.216.34", port: 443, status: 502, reason: "93.184.216.34: Connection refused"))
        XCTAssertEqual(machine.draining?.deadline, 2_100 + ProxyConnectionRules.drainTime)
    }

    func testALiteralsAttemptPastItsDeadlineIsAnswered504() throws {
        var machine = F.machine()
        let plan = try XCTUnwrap(F.read(&machine, F.connect("93.184.216.34:443"), now: 2_000).plan)
        _ = machine.attemptStarted(plan, .inProgress(F.upstream), now: 2_000)
        XCTAssertTrue(machine.checkDeadlines(now: plan.deadline).isNone)
        let response = try XCTUnwrap(machine.checkDeadlines(now: plan.deadline + 1).response)
        XCTAssertEqual(response.status, 504)
        XCTAssertEqual(response.failedAddress?.error.code, .timedOut)
        XCTAssertEqual(response.release.upstream, F.upstream)
        XCTAssertEqual(
            response.report, .tunnelFailed(host: "93.184.216.34", port: 443, status: 504, reason: "93.184.216.34: connect timed out"))
    }

    func testAConnectThatFailsAtOnceIsAnsweredAndAnUnwatchedSocketClosed() throws {
        var machine = F.machine()
        let plan = try XCTUnwrap(F.read(&machine, F.connect("93.184.216.34:443")).plan)
        let response = try XCTUnwrap(machine.attemptStarted(plan, .failed(.timedOut, "Connection timed out", socket: nil), now: 2_000).response)
        XCTAssertEqual(response.status, 504)
        XCTAssertNil(response.release.upstream)

        var unwatched = F.machine()
        let again = try XCTUnwrap(F.read(&unwatched, F.connect("93.184.216.34:443")).plan)
        let socket = Machine.Upstream(socket: 11, token: 0)
        let refused = try XCTUnwrap(unwatched.attemptStarted(again, .failed(.cannotConnectToHost, "epoll: x", socket: socket), now: 2_000).response)
        XCTAssertEqual(refused.status, 502)
        XCTAssertEqual(refused.release.upstream, socket)
    }

    /// A name's cached address that fails is cooled down and the connector takes over.
    func testANamesFailedFastPathHandsOverToTheConnector() throws {
        var machine = F.machine()
        let plan = try XCTUnwrap(F.read(&machine, F.connect("www.example.com:443"), cached: F.publicAddress).plan)
        _ = machine.attemptStarted(plan, .inProgress(F.upstream), now: 2_000)
        guard case .startConnector(let host, let port, let cooling, let closing) = machine.checkDeadlines(now: plan.deadline + 1) else {
            return XCTFail("no connector")
        }
        XCTAssertEqual(host, "www.example.com")
        XCTAssertEqual(port, 443)
        XCTAssertEqual(cooling?.address, F.publicAddress)
        XCTAssertEqual(cooling?.error.code, .timedOut)
        XCTAssertEqual(closing, F.upstream)
        XCTAssertTrue(machine.isConnecting)
        XCTAssertFalse(machine.isAttempting)
        XCTAssertTrue(machine.checkDeadlines(now: plan.deadline + 1_000_000).isNone, "no attempt, no connect deadline")
    }

    // MARK: - Connecting: the connector's attempts

    func testTheConnectorsAttemptConnectsAndTheConnectorHearsItAfterTheRelayStarts() throws {
        var machine = F.machine()
        _ = F.read(&machine, F.connect("www.example.com:443"))
        let recorder = DeliveryRecorder()
        let plan = try XCTUnwrap(machine.attemptRequested(address: F.otherAddress, port: 443, number: 2, deliver: recorder.deliver, now: 3_000).plan)
        XCTAssertEqual(plan.deadline, 3_000 + F.connectTimeout)
        XCTAssertEqual(plan.number, 2)
        XCTAssertTrue(machine.attemptStarted(plan, .inProgress(F.upstream), now: 3_000).isNone)
        XCTAssertTrue(machine.isAttempting)
        let (opened, deliver) = try XCTUnwrap(machine.upstreamEvent(.init(writable: true), now: 3_100).opened)
        XCTAssertEqual(opened, Machine.Opened(host: "www.example.com", port: 443, address: F.otherAddress, attempts: 2))
        XCTAssertTrue(recorder.results.isEmpty, "the connection tells the connector once the relay runs")
        deliver?(.connected)
        XCTAssertTrue(recorder.lastIsConnected)
        XCTAssertNotNil(machine.relaying)
    }

    func testTheConnectorHearsEachFailedAttemptWithItsSocketClosed() throws {
        var machine = F.machine()
        _ = F.read(&machine, F.connect("www.example.com:443"))
        let recorder = DeliveryRecorder()
        var plan = try XCTUnwrap(machine.attemptRequested(address: F.publicAddress, port: 443, number: 1, deliver: recorder.deliver, now: 3_000).plan)
        _ = machine.attemptStarted(plan, .inProgress(F.upstream), now: 3_000)
        guard case .deliver(let deliver, let result, let closing) = machine.attemptFailed(.cannotConnectToHost, "Connection refused", now: 3_001) else {
            return XCTFail("the connector hears it")
        }
        XCTAssertEqual(closing, F.upstream)
        deliver(result)
        XCTAssertEqual(recorder.lastError?.code, .cannotConnectToHost)
        XCTAssertEqual(recorder.lastError?.attemptedAddress, F.publicAddress)
        XCTAssertEqual(recorder.lastError?.host, "www.example.com")
        XCTAssertTrue(machine.isConnecting)

        // The next one times out; one that fails at once closes nothing.
        plan = try XCTUnwrap(machine.attemptRequested(address: F.otherAddress, port: 443, number: 2, deliver: recorder.deliver, now: 4_000).plan)
        _ = machine.attemptStarted(plan, .inProgress(F.upstream), now: 4_000)
        guard case .deliver(let second, let timedOut, _) = machine.checkDeadlines(now: plan.deadline + 1) else { return XCTFail("no delivery") }
        second(timedOut)
        XCTAssertEqual(recorder.lastError?.code, .timedOut)
        plan = try XCTUnwrap(machine.attemptRequested(address: F.otherAddress, port: 443, number: 3, deliver: recorder.deliver, now: 5_000).plan)
        guard case .deliver(_, _, let none) = machine.attemptStarted(plan, .failed(.cannotConnectToHost, "unreachable", socket: nil), now: 5_000) else {
            return XCTFail("no delivery")
        }
        XCTAssertNil(none)
    }

    func testTheConnectorOutOfAddressesIsAnsweredWithItsStatus() throws {
        var machine = F.machine()
        _ = F.read(&machine, F.connect("www.example.com:443"))
        let response = try XCTUnwrap(machine.connectorFailed(.init(status: 504, reason: "no address connected (x)"), now: 6_000).response)
        XCTAssertEqual(response.status, 504)
        XCTAssertTrue(response.drain)
        XCTAssertEqual(response.report, .tunnelFailed(host: "www.example.com", port: 443, status: 504, reason: "no address connected (x)"))
        XCTAssertNil(response.release.upstream)
        XCTAssertTrue(machine.connectorFailed(.init(status: 502, reason: "late"), now: 6_001).isNone, "only while connecting")
    }

    func testAnAttemptAskedForOutOfTurnIsGone() throws {
        let recorder = DeliveryRecorder()
        var reading = F.machine()
        guard case .release(let release) = reading.attemptRequested(address: F.publicAddress, port: 443, number: 1, deliver: recorder.deliver, now: 1) else {
            return XCTFail("refused")
        }
        release.deliverGone?(.gone)
        XCTAssertTrue(recorder.lastIsGone)

        var busy = F.machine()
        let plan = try XCTUnwrap(F.read(&busy, F.connect("93.184.216.34:443")).plan)
        _ = busy.attemptStarted(plan, .inProgress(F.upstream), now: 2_000)
        guard case .release(let second) = busy.attemptRequested(address: F.otherAddress, port: 443, number: 2, deliver: recorder.deliver, now: 2_001) else {
            return XCTFail("refused")
        }
        XCTAssertNil(second.upstream, "the attempt in flight stays")
        XCTAssertTrue(busy.isAttempting)
    }

    func testAFailedClientOrAStopWhileConnectingClosesTheAttemptAndTellsTheConnector() throws {
        let recorder = DeliveryRecorder()
        var machine = F.machine()
        _ = F.read(&machine, F.connect("www.example.com:443"))
        let plan = try XCTUnwrap(machine.attemptRequested(address: F.publicAddress, port: 443, number: 1, deliver: recorder.deliver, now: 3_000).plan)
        _ = machine.attemptStarted(plan, .inProgress(F.upstream), now: 3_000)
        XCTAssertTrue(machine.clientEvent(.init(readable: true, hungUp: true)).isNone, "a half-closed client waits for its tunnel")
        let release = try XCTUnwrap(machine.clientEvent(.init(readable: true, writable: true, hungUp: true, failed: true)).closing)
        XCTAssertEqual(release.upstream, F.upstream)
        release.deliverGone?(.gone)
        XCTAssertTrue(recorder.lastIsGone)
        XCTAssertTrue(machine.isClosed)

        var stopped = F.machine()
        _ = F.read(&stopped, F.connect("93.184.216.34:443"))
        let stop = try XCTUnwrap(stopped.proxyStopped().closing)
        XCTAssertNil(stop.upstream, "no attempt yet")
        XCTAssertNil(stop.deliverGone)
        XCTAssertTrue(stopped.upstreamEvent(.init(writable: true), now: 1).isNone)
    }

    func testAnUpstreamEdgeWithoutAnAttemptIsIgnored() {
        var machine = F.machine()
        _ = F.read(&machine, F.connect("www.example.com:443"))
        XCTAssertTrue(machine.upstreamEvent(.init(writable: true), now: 2_000).isNone)
        XCTAssertTrue(machine.attemptFailed(.timedOut, "late", now: 2_000).isNone)
        XCTAssertTrue(machine.isConnecting)
    }
}
