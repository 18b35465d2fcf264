import Foundation
import HTTPDNSCore
@testable import HTTPDNSLoopbackProxy
import XCTest

/// The connection's state machine while relaying, draining and closed: the pumps' outcomes set by
/// hand (what used to be read through force-unwrapped optional pumps), the idle and drain
/// deadlines, failures and the proxy stopping.
final class ProxyConnectionStateMachineRelayTests: XCTestCase {
    typealias F = MachineFixture

    // MARK: - Relaying

    func testAnEdgeReachesThePumpsBeforeTheyRun() throws {
        var machine = F.relaying()
        var ran = 0
        _ = machine.clientEvent(.init(readable: true, hungUp: true), now: 5_000) { toServer, toClient in
            ran += 1
            XCTAssertTrue(toServer.sourceReadable)
            XCTAssertTrue(toServer.sourceHungUp)
            XCTAssertFalse(toClient.sourceReadable)
            toServer.destinationWritable = false
            toClient.destinationWritable = false
            return false
        }
        _ = machine.clientEvent(.init(writable: true), now: 5_001) { toServer, toClient in
            ran += 1
            XCTAssertTrue(toClient.destinationWritable)
            XCTAssertFalse(toServer.destinationWritable)
            return false
        }
        _ = machine.upstreamEvent(.init(readable: true, writable: true), now: 5_002) { toServer, toClient in
            ran += 1
            XCTAssertTrue(toClient.sourceReadable)
            XCTAssertFalse(toClient.sourceHungUp)
            XCTAssertTrue(toServer.destinationWritable)
            return true
        }
        XCTAssertEqual(ran, 3)
        XCTAssertEqual(machine.relaying?.lastActivity, 5_002)
        // The pumps run only while relaying.
        var reading = F.machine()
        XCTAssertTrue(reading.clientEvent(.init(readable: true), now: 1) { _, _ in
            XCTFail("no relay yet")
            return true
        }.isReadHead)
    }

    func testProgressPostponesTheIdleDeadline() throws {
        var machine = F.relaying()
        XCTAssertTrue(machine.relay(now: 5_000) { _, _ in true }.isNone)
        XCTAssertEqual(machine.relaying?.lastActivity, 5_000)
        XCTAssertTrue(machine.relay(now: 9_000) { _, _ in false }.isNone)
        XCTAssertEqual(machine.relaying?.lastActivity, 5_000, "no byte moved")
        XCTAssertTrue(machine.checkDeadlines(now: 5_000 + F.idleTimeout).isNone)
        let release = try XCTUnwrap(machine.checkDeadlines(now: 5_000 + F.idleTimeout + 1).closing)
        XCTAssertEqual(release.upstream, F.upstream)
        XCTAssertEqual(release.tunnel?.target, .tunnel(host: "93.184.216.34", port: 443))
        XCTAssertTrue(machine.isClosed)
    }

    func testATunnelClosesWhenBothDirectionsAreOverWithTheirCounts() throws {
        var machine = F.relaying()
        let half = machine.relay(now: 5_000) { toServer, toClient in
            toClient.finished = true
            toClient.moved = 1_234
            return true
        }
        XCTAssertTrue(half.isNone, "the client may still send")
        let release = try XCTUnwrap(machine.relay(now: 6_000) { toServer, _ in
            toServer.finished = true
            toServer.moved = 56
            return true
        }.closing)
        XCTAssertEqual(release.upstream, F.upstream)
        XCTAssertEqual(release.tunnel?.bytesToServer, 56)
        XCTAssertEqual(release.tunnel?.bytesToClient, 1_234)
        XCTAssertNil(release.deliverGone)
        XCTAssertTrue(machine.isClosed)
        XCTAssertTrue(machine.relay(now: 7_000) { _, _ in
            XCTFail("no pump runs once closed")
            return true
        }.isNone)
    }

    func testAForwardedRequestClosesWhenTheResponseIsOver() throws {
        var machine = F.relaying(F.forward("http://93.184.216.34/"))
        XCTAssertNotNil(machine.relay(now: 5_000) { _, toClient in
            toClient.finished = true
            return true
        }.closing)
    }

    func testAPumpFailureClosesEverything() throws {
        for side in ["toServer", "toClient"] {
            var machine = F.relaying()
            let release = try XCTUnwrap(machine.relay(now: 5_000) { toServer, toClient in
                if side == "toServer" { toServer.failure = "write: Broken pipe" } else { toClient.failure = "read: Connection reset by peer" }
                return false
            }.closing, side)
            XCTAssertEqual(release.upstream, F.upstream)
            XCTAssertNotNil(release.tunnel)
        }
    }

    func testAnUnreadableResponseBeforeAnyByteIsAnswered502() throws {
        var machine = F.relaying(F.forward("http://93.184.216.34/"))
        // The client's socket was left watched for writing only: the answer needs it watched again.
        _ = machine.relay(now: 5_000) { toServer, _ in
            toServer.destinationWritable = false  // the rewritten request head waits
            return true
        }
        let response = try XCTUnwrap(machine.relay(now: 6_000) { toServer, toClient in
            toServer.destinationWritable = true
            toClient.failure = "bad response from the server: bad status line"
            toClient.badResponse = true
            return false
        }.response)
        XCTAssertEqual(response.status, 502)
        XCTAssertTrue(response.drain)
        XCTAssertTrue(response.rewatchClient)
        XCTAssertEqual(response.report, .tunnelFailed(host: "93.184.216.34", port: 80, status: 502, reason: "bad response from 93.184.216.34"))
        XCTAssertEqual(response.release.upstream, F.upstream, "the upstream goes first, reported closed")
        XCTAssertNotNil(response.release.tunnel)
        XCTAssertTrue(machine.reply.hasPrefix("HTTP/1.1 502 Bad Gateway\r\n"))

        // Once a byte of the response went out, the only honest end is a close.
        var late = F.relaying(F.forward("http://93.184.216.34/"))
        XCTAssertNotNil(late.relay(now: 5_000) { _, toClient in
            toClient.failure = "the server closed before a whole response head"
            toClient.badResponse = true
            toClient.moved = 10
            return true
        }.closing)
    }

    func testASocketWhoseBytesWaitIsWatchedForWritingOnly() throws {
        // The bytes read with the head wait for an upstream that takes no more.
        var machine = F.relaying(F.connect("93.184.216.34:443", extra: "hello"))
        let watch = try XCTUnwrap(machine.relay(now: 5_000) { toServer, _ in
            toServer.destinationWritable = false
            return false
        }.watched)
        XCTAssertEqual(watch.client, .writeOnly)
        XCTAssertNil(watch.upstream)
        XCTAssertTrue(machine.relay(now: 5_001) { _, _ in false }.isNone, "unchanged: no call")
        XCTAssertEqual(machine.relay(now: 5_002) { toServer, _ in
            toServer.destinationWritable = true
            return false
        }.watched?.client, .all)

        // The `200 Connection established` waits for a client that takes no more.
        let upstream = try XCTUnwrap(machine.relay(now: 5_003) { _, toClient in
            toClient.destinationWritable = false
            return false
        }.watched?.upstream)
        XCTAssertEqual(upstream.0, F.upstream)
        XCTAssertEqual(upstream.1, .writeOnly)
    }

    func testAStopOrAClientWhoseReadFailedWhileRelayingClosesWithTheTunnelsCounts() throws {
        var machine = F.relaying()
        _ = machine.relay(now: 5_000) { _, toClient in
            toClient.moved = 99
            return true
        }
        let release = try XCTUnwrap(machine.proxyStopped().closing)
        XCTAssertEqual(release.tunnel?.bytesToClient, 99)
        XCTAssertEqual(release.upstream, F.upstream)

        var gone = F.relaying()
        XCTAssertNotNil(gone.clientHungUp().closing?.tunnel)
    }

    // MARK: - Draining

    func testTheAnswerGoesOutInPiecesThenTheClientsInputIsDropped() throws {
        var machine = F.machine()
        _ = F.read(&machine, "CONNECT 93.184.216.34:443 HTTP/1.1\r\n\r\n", now: 2_000)
        let whole = try XCTUnwrap(machine.unsentReply)
        machine.replySent(10)
        XCTAssertEqual(machine.unsentReply.map(Array.init), Array(whole.dropFirst(10)))
        XCTAssertTrue(machine.clientEvent(.init(writable: true)).isDrain)
        XCTAssertTrue(machine.upstreamEvent(.init(readable: true), now: 2_000).isNone)
        machine.replySent(whole.count)
        XCTAssertNil(machine.unsentReply)
        XCTAssertTrue(machine.clientEvent(.init(readable: true)).isDrain)
        XCTAssertNotNil(machine.draining, "until the client's end")
        XCTAssertNotNil(machine.clientHungUp().closing)
    }

    func testTheDrainDeadlineAndAStopCloseADrainingConnection() throws {
        var machine = F.machine()
        _ = F.read(&machine, "CONNECT 93.184.216.34:443 HTTP/1.1\r\n\r\n", now: 2_000)
        XCTAssertTrue(machine.checkDeadlines(now: 2_000 + ProxyConnectionRules.drainTime).isNone)
        let release = try XCTUnwrap(machine.checkDeadlines(now: 2_001 + ProxyConnectionRules.drainTime).closing)
        XCTAssertNil(release.upstream)

        var stopped = F.machine()
        _ = F.read(&stopped, "CONNECT 93.184.216.34:443 HTTP/1.1\r\n\r\n", now: 2_000)
        XCTAssertNotNil(stopped.proxyStopped().closing)
    }

    // MARK: - Closed

    func testNothingHappensOnceClosed() {
        var machine = F.relaying()
        _ = machine.proxyStopped()
        let recorder = DeliveryRecorder()
        XCTAssertTrue(machine.clientEvent(.init(readable: true, writable: true, hungUp: true, failed: true)).isNone)
        XCTAssertTrue(machine.upstreamEvent(.init(readable: true, writable: true), now: 1).isNone)
        XCTAssertTrue(machine.checkDeadlines(now: .max).isNone)
        XCTAssertTrue(machine.clientHungUp().isNone)
        XCTAssertTrue(machine.replyFlushed().isNone)
        XCTAssertTrue(machine.connectorFailed(.init(status: 502, reason: "x"), now: 1).isNone)
        XCTAssertTrue(machine.attemptFailed(.timedOut, "x", now: 1).isNone)
        guard case .release(let release) = machine.attemptRequested(address: F.publicAddress, port: 443, number: 1, deliver: recorder.deliver, now: 1) else {
            return XCTFail("an attempt for a closed connection is gone")
        }
        release.deliverGone?(.gone)
        XCTAssertTrue(recorder.lastIsGone)
        XCTAssertNil(machine.headRoom(scratch: 100))
        XCTAssertNil(machine.unsentReply)
        XCTAssertTrue(machine.isClosed)
    }
}
