import Foundation
import HTTPDNSCore
@testable import HTTPDNSLoopbackProxy
import XCTest

/// The proxy's drain in every state of a connection, without sockets: what has nothing in flight
/// closes at once, the rest is marked and closes once its exchange is over (issue 25).
final class ProxyConnectionStateMachineDrainTests: XCTestCase {
    typealias F = MachineFixture

    // MARK: - Reading the head

    func testAClientThatJustConnectedIsGivenTimeForItsRequestAndClosesIfNoneComes() throws {
        var machine = F.machine()
        let drained = F.accepted + 10
        XCTAssertTrue(machine.proxyDraining(now: drained).isNone, "a request may be on its way")
        XCTAssertTrue(machine.stopping)
        XCTAssertTrue(machine.isReadingHead)
        XCTAssertTrue(machine.checkDeadlines(now: F.accepted + F.drainQuiet - 1).isNone)
        let release = try XCTUnwrap(machine.checkDeadlines(now: F.accepted + F.drainQuiet).closing)
        XCTAssertNil(release.upstream)
        XCTAssertTrue(machine.isClosed)
    }

    func testAClientQuietSinceItConnectedLongAgoClosesAtOnce() {
        var machine = F.machine()
        XCTAssertNotNil(machine.proxyDraining(now: F.accepted + F.drainQuiet).closing, "a pre-connect that sent nothing")
        XCTAssertTrue(machine.isClosed)
    }

    func testAHeadThatArrivesDuringTheDrainIsServed() throws {
        var machine = F.machine()
        _ = machine.proxyDraining(now: F.accepted + 10)
        let plan = try XCTUnwrap(F.read(&machine, F.connect("93.184.216.34:443"), now: F.accepted + 20).plan)
        XCTAssertTrue(machine.isConnecting)
        XCTAssertTrue(machine.checkDeadlines(now: F.accepted + F.drainQuiet * 2).isNone, "connecting is never idle")
        XCTAssertNotNil(machine.attemptStarted(plan, .connected(F.upstream), now: F.accepted + 30).opened)
        XCTAssertNotNil(machine.relaying)
        XCTAssertTrue(machine.stopping, "still marked")
    }

    func testAPartHeadIsReadOnLongAfterTheConnect() throws {
        var machine = F.machine()
        XCTAssertTrue(F.read(&machine, "CONNECT 93.184", now: F.accepted + 1).isNone)
        XCTAssertTrue(machine.proxyDraining(now: F.accepted + F.drainQuiet * 3).isNone, "a request half read is in flight")
        XCTAssertTrue(machine.checkDeadlines(now: F.accepted + F.drainQuiet * 4).isNone)
        XCTAssertTrue(machine.isReadingHead)
        XCTAssertTrue(machine.clientEvent(.init(readable: true)).isReadHead)
        let rest = Array(".216.34:443 HTTP/1.1\r\nHost: x\r\n\(F.credential)\r\n".utf8)
        let action = rest.withUnsafeBytes { machine.headBytesRead($0, short: true, now: F.accepted + F.drainQuiet * 4) { _ in nil } }
        XCTAssertEqual(action.plan?.address, F.publicAddress)
    }

    func testAClientWhoseEdgeSaidReadableIsNotIdle() {
        var machine = F.machine()
        _ = machine.clientEvent(.init(readable: true))
        XCTAssertTrue(machine.proxyDraining(now: F.accepted + F.drainQuiet * 2).isNone, "its bytes are about to be read")
    }

    // MARK: - Connecting

    func testConnectingGoesOnToTheRelay() throws {
        var machine = F.machine()
        let plan = try XCTUnwrap(F.read(&machine, F.connect("93.184.216.34:443")).plan)
        XCTAssertTrue(machine.attemptStarted(plan, .inProgress(F.upstream), now: F.accepted + 2).isNone)
        XCTAssertTrue(machine.proxyDraining(now: F.accepted + F.drainQuiet * 2).isNone)
        XCTAssertTrue(machine.isAttempting)
        XCTAssertNotNil(machine.upstreamEvent(.init(writable: true), now: F.accepted + F.drainQuiet * 2).opened)
        XCTAssertNotNil(machine.relaying)
    }

    // MARK: - Relaying

    func testAForwardedRequestGetsItsWholeResponseHoweverQuiet() throws {
        var machine = F.relaying(F.forward("http://93.184.216.34/"))
        XCTAssertTrue(machine.proxyDraining(now: F.accepted + F.idleTimeout - 1).isNone, "the origin may be slow to answer")
        XCTAssertTrue(machine.checkDeadlines(now: F.accepted + F.idleTimeout - 1).isNone)
        let release = try XCTUnwrap(machine.relay(now: F.accepted + F.idleTimeout - 1) { _, toClient in
            toClient.finished = true
            return true
        }.closing)
        XCTAssertEqual(release.tunnel?.target.host, "93.184.216.34")
        XCTAssertTrue(machine.isClosed)
    }

    func testATunnelHoldingBytesIsInFlightHoweverLongAgoTheyMoved() throws {
        var machine = F.relaying()
        XCTAssertTrue(try XCTUnwrap(machine.relaying).toClient.holdsBytes, "the 200 waits to go out")
        XCTAssertTrue(machine.proxyDraining(now: F.accepted + F.drainQuiet * 5).isNone)
        XCTAssertTrue(machine.checkDeadlines(now: F.accepted + F.drainQuiet * 6).isNone)
        emptyPumps(&machine, lastActivity: F.accepted + F.drainQuiet * 6)
        XCTAssertTrue(machine.checkDeadlines(now: F.accepted + F.drainQuiet * 7 - 1).isNone)
        let release = try XCTUnwrap(machine.checkDeadlines(now: F.accepted + F.drainQuiet * 7).closing)
        XCTAssertEqual(release.upstream, F.upstream)
        XCTAssertEqual(release.tunnel?.target, .tunnel(host: "93.184.216.34", port: 443))
    }

    func testABusyTunnelClosesOnceQuiet() throws {
        var machine = F.relaying()
        emptyPumps(&machine, lastActivity: F.accepted)
        let drained = F.accepted + 100
        XCTAssertTrue(machine.relay(now: drained) { _, _ in true }.isNone)
        XCTAssertTrue(machine.proxyDraining(now: drained).isNone, "bytes moved just now")
        XCTAssertTrue(machine.relay(now: drained + F.drainQuiet - 1) { _, _ in true }.isNone, "an answer still moving")
        XCTAssertTrue(machine.checkDeadlines(now: drained + F.drainQuiet * 2 - 2).isNone)
        XCTAssertNotNil(machine.checkDeadlines(now: drained + F.drainQuiet * 2 - 1).closing)
        XCTAssertTrue(machine.isClosed)
    }

    func testAQuietTunnelClosesAtOnce() throws {
        var machine = F.relaying()
        emptyPumps(&machine, lastActivity: F.accepted)
        let release = try XCTUnwrap(machine.proxyDraining(now: F.accepted + F.drainQuiet).closing)
        XCTAssertEqual(release.upstream, F.upstream)
        XCTAssertNotNil(release.tunnel)
        XCTAssertTrue(machine.isClosed)
    }

    /// Bytes that reached a socket after the loop's wait returned are not in its batch yet: a tunnel
    /// quiet by the loop's clock with a request (or an answer) waiting unread is not idle.
    func testAQuietTunnelWithBytesWaitingUnreadIsNotIdle() throws {
        var machine = F.relaying()
        emptyPumps(&machine, lastActivity: F.accepted)
        var asked: [Int32] = []
        XCTAssertTrue(machine.proxyDraining(now: F.accepted + F.drainQuiet) { asked.append($0); return $0 == F.client }.isNone,
                      "a request waits on the client's socket")
        XCTAssertEqual(asked, [F.client])
        asked = []
        XCTAssertTrue(machine.checkDeadlines(now: F.accepted + F.drainQuiet * 2) { asked.append($0); return $0 == F.upstream.socket }.isNone,
                      "an answer waits on the upstream's socket")
        XCTAssertEqual(asked, [F.client, F.upstream.socket])
        XCTAssertNotNil(machine.checkDeadlines(now: F.accepted + F.drainQuiet * 3) { _ in false }.closing)
        XCTAssertTrue(machine.isClosed)
    }

    func testAClientWithARequestWaitingUnreadIsNotIdle() throws {
        var machine = F.machine()
        var asked = 0
        XCTAssertTrue(machine.proxyDraining(now: F.accepted + F.drainQuiet) { asked += 1; return $0 == F.client }.isNone)
        XCTAssertEqual(asked, 1)
        XCTAssertTrue(machine.isReadingHead)
        XCTAssertTrue(machine.checkDeadlines(now: F.accepted + F.drainQuiet + 1) { _ in false }.closing != nil)
    }

    func testTheSocketsAreNotAskedWhileBytesMoved() throws {
        var machine = F.relaying()
        emptyPumps(&machine, lastActivity: F.accepted)
        XCTAssertTrue(machine.proxyDraining(now: F.accepted + F.drainQuiet - 1) { _ in
            XCTFail("asked while not quiet")
            return false
        }.isNone)
    }

    func testAQuietTunnelStaysWithoutADrain() {
        var machine = F.relaying()
        emptyPumps(&machine, lastActivity: F.accepted)
        XCTAssertTrue(machine.checkDeadlines(now: F.accepted + F.drainQuiet * 3).isNone, "only the idle timeout closes it")
        XCTAssertFalse(machine.stopping)
    }

    // MARK: - Draining (an answer going out) and closed

    func testAnAnswerGoingOutKeepsItsOwnDeadline() throws {
        var machine = F.machine()
        let response = try XCTUnwrap(F.read(&machine, "CONNECT 93.184.216.34:443 HTTP/1.1\r\nHost: 93.184.216.34:443\r\n\r\n").response)
        XCTAssertEqual(response.status, 407)
        XCTAssertTrue(machine.proxyDraining(now: F.accepted + F.drainQuiet * 2).isNone, "the 407 is still going out")
        XCTAssertNotNil(machine.unsentReply)
        XCTAssertTrue(machine.checkDeadlines(now: F.accepted + 1 + ProxyConnectionRules.drainTime).isNone)
        XCTAssertNotNil(machine.checkDeadlines(now: F.accepted + 2 + ProxyConnectionRules.drainTime).closing)
    }

    func testAClosedConnectionIgnoresTheDrain() {
        var machine = F.machine()
        _ = machine.proxyStopped()
        XCTAssertTrue(machine.proxyDraining(now: F.accepted).isNone)
        XCTAssertFalse(machine.stopping)
        XCTAssertTrue(machine.checkDeadlines(now: F.accepted + F.drainQuiet).isNone)
    }

    // MARK: - Helpers

    /// The tunnel's pumps with nothing waiting to go out (as after a run that flushed the 200).
    private func emptyPumps(_ machine: inout Machine, lastActivity: UInt64) {
        guard case .relaying(let box) = machine.state else { return XCTFail("not relaying") }
        box.relaying.toServer = ProxyPump(from: F.client, to: F.upstream.socket, prefix: [], scanResponse: false)
        box.relaying.toClient = ProxyPump(from: F.upstream.socket, to: F.client, prefix: [], scanResponse: false)
        box.relaying.lastActivity = lastActivity
    }
}
