import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSTestSupport
import XCTest

final class HTTPDNSEngineTests: XCTestCase {
    func testAnswersFromFirstProviderAndCachesIt() async throws {
        let provider = FakeResolver("p1", .answer(["93.184.216.34", "93.184.216.35"], ttl: 120))
        let subject = engine([provider])
        let first = try await subject.resolve("WWW.Example.com.")
        XCTAssertEqual(first.host, "www.example.com")
        XCTAssertEqual(first.addresses.map(\.description), ["93.184.216.34", "93.184.216.35"])
        XCTAssertEqual(first.source, "p1")
        XCTAssertEqual(first.origin, .httpdns)
        XCTAssertFalse(first.fromCache)
        let second = try await subject.resolve("www.example.com")
        XCTAssertTrue(second.fromCache)
        XCTAssertEqual(provider.calls, 1)
    }

    func testIPLiteralIsNeverResolved() async throws {
        let provider = FakeResolver("p1", .answer(["93.184.216.34"], ttl: 120))
        let subject = engine([provider])
        let answer = try await subject.resolve("192.0.2.7")
        XCTAssertEqual(answer.addresses, [HTTPDNSIPAddress("192.0.2.7")!])
        XCTAssertEqual(provider.calls, 0)
        XCTAssertFalse(subject.protects("192.0.2.7"))
        XCTAssertFalse(subject.protects("[::1]"))
    }

    func testInvalidHostIsRejectedBeforeAnyLookup() async {
        let provider = FakeResolver("p1", .answer(["93.184.216.34"], ttl: 120))
        let subject = engine([provider])
        for bad in ["", "a..b", "bad host", String(repeating: "a", count: 64) + ".com", "-x.com"] {
            do {
                _ = try await subject.resolve(bad)
                XCTFail("\(bad) resolved")
            } catch let error as HTTPDNSError {
                XCTAssertEqual(error.code, .invalidHost)
            } catch {
                XCTFail("unexpected \(error)")
            }
        }
        XCTAssertEqual(provider.calls, 0)
    }

    func testFailoverToNextProviderKeepsEveryFailure() async throws {
        let broken = FakeResolver("p1", .fail(.httpStatus))
        let good = FakeResolver("p2", .answer(["198.51.100.1"], ttl: 60))
        let monitor = RecordingMonitor()
        let subject = engine([broken, good], monitor: monitor)
        let answer = try await subject.resolve("a.example")
        XCTAssertEqual(answer.source, "p2")
        XCTAssertTrue(monitor.events.contains("failed p1 httpStatus"))
    }

    func testEveryProviderDownFallsBackToLocalDNS() async throws {
        let p1 = FakeResolver("p1", .fail(.transport))
        let p2 = FakeResolver("p2", .fail(.timedOut))
        let local = FakeResolver("system", .answer(["203.0.113.9"], ttl: nil))
        let monitor = RecordingMonitor()
        let subject = engine([p1, p2], local: local, monitor: monitor)
        let answer = try await subject.resolve("b.example")
        XCTAssertEqual(answer.origin, .localDNS)
        XCTAssertEqual(answer.source, "system")
        XCTAssertEqual(answer.addresses.map(\.description), ["203.0.113.9"])
        XCTAssertTrue(monitor.events.contains("local b.example"))
    }

    func testHTTPDNSOnlyNeverAsksLocalDNSAndListsAttempts() async {
        let p1 = FakeResolver("p1", .fail(.transport))
        let p2 = FakeResolver("p2", .fail(.malformedAnswer))
        let local = FakeResolver("system", .answer(["203.0.113.9"], ttl: nil))
        let subject = engine([p1, p2], local: local) { $0.failover.httpdnsOnly = true }
        do {
            _ = try await subject.resolve("c.example")
            XCTFail("resolved")
        } catch let error as HTTPDNSError {
            XCTAssertEqual(error.code, .allAttemptsFailed)
            XCTAssertEqual(error.attempts.map(\.source), ["p1", "p2"])
            XCTAssertEqual(error.attempts.map(\.error.code), [.transport, .malformedAnswer])
        } catch {
            XCTFail("unexpected \(error)")
        }
        XCTAssertEqual(local.calls, 0)
    }

    func testAllFailingIncludingLocalListsEveryAttempt() async {
        let p1 = FakeResolver("p1", .fail(.transport))
        let local = FakeResolver("system", .fail(.nameNotFound))
        let subject = engine([p1], local: local)
        do {
            _ = try await subject.resolve("d.example")
            XCTFail("resolved")
        } catch let error as HTTPDNSError {
            XCTAssertEqual(error.code, .allAttemptsFailed)
            XCTAssertEqual(error.attempts.map(\.source), ["p1", "system"])
        } catch {
            XCTFail("unexpected \(error)")
        }
    }

    func testBogonsAreDroppedAndAllBogonAnswerFailsOver() async throws {
        let liar = FakeResolver("liar", .answer(["127.0.0.1", "10.1.2.3", "0.0.0.0"], ttl: 60))
        let mixed = FakeResolver("mixed", .answer(["192.168.1.1", "198.51.100.7", "198.51.100.7", "198.51.100.8"], ttl: 60))
        let subject = engine([liar, mixed])
        let answer = try await subject.resolve("e.example")
        XCTAssertEqual(answer.source, "mixed")
        XCTAssertEqual(answer.addresses.map(\.description), ["198.51.100.7", "198.51.100.8"])
    }

    func testLoopbackAllowedOnlyWhenConfigured() async throws {
        let provider = FakeResolver("p", .answer(["127.0.0.2"], ttl: 60))
        let subject = engine([provider]) { $0.hygiene.allowPrivate = true }
        let answer = try await subject.resolve("f.example")
        XCTAssertEqual(answer.addresses.map(\.description), ["127.0.0.2"])
    }

    func testFamilySelection() async throws {
        let provider = FakeResolver("p", .answer(["198.51.100.1", "2001:db8::1"], ttl: 60))
        let subject = engine([provider]) { $0.hygiene.allowPrivate = true }
        let v6 = try await subject.resolve("g.example", family: .ipv6)
        XCTAssertEqual(v6.addresses.map(\.description), ["2001:db8::1"])
        let both = try await subject.resolve("g.example", family: .both)
        XCTAssertEqual(both.addresses.map(\.description), ["198.51.100.1", "2001:db8::1"])
        XCTAssertEqual(provider.calls, 2, "families are cached separately")
    }

    func testHangingProviderIsAbandonedAtTheAttemptTimeout() async throws {
        let hung = FakeResolver("hung", .hang)
        let good = FakeResolver("good", .answer(["198.51.100.2"], ttl: 60))
        let subject = engine([hung, good]) {
            $0.timeouts.perAttempt = .seconds(0.2)
            $0.timeouts.httpdnsBudget = .seconds(2)
        }
        let answer = try await subject.resolve("h.example")
        XCTAssertEqual(answer.source, "good")
    }

    func testBudgetExhaustedGoesToLocalDNS() async throws {
        let hung1 = FakeResolver("hung1", .hang)
        let hung2 = FakeResolver("hung2", .hang)
        let never = FakeResolver("never", .answer(["198.51.100.3"], ttl: 60))
        let local = FakeResolver("system", .answer(["198.51.100.4"], ttl: nil))
        let subject = engine([hung1, hung2, never], local: local) {
            $0.timeouts.perAttempt = .seconds(0.3)
            $0.timeouts.httpdnsBudget = .seconds(0.5)
        }
        let answer = try await subject.resolve("i.example")
        XCTAssertEqual(answer.source, "system")
        XCTAssertEqual(never.calls, 0, "the budget ran out before the third provider")
    }

    func testFailingProviderCoolsDownAndIsTriedLast() async throws {
        let clock = HTTPDNSManualClock()
        let flaky = FakeResolver("flaky", .fail(.transport))
        let good = FakeResolver("good", .answer(["198.51.100.5"], ttl: 60))
        let subject = engine([flaky, good], clock: clock)
        _ = try await subject.resolve("j1.example")
        XCTAssertEqual(flaky.calls, 1)
        _ = try await subject.resolve("j2.example")
        XCTAssertEqual(flaky.calls, 1, "cooling down: good answered first")
        clock.advance(by: 31)
        flaky.set(.answer(["198.51.100.6"], ttl: 60))
        let answer = try await subject.resolve("j3.example")
        XCTAssertEqual(answer.source, "flaky", "after the cool-down the first provider is first again")
    }

    func testAddressCooldownMovesAddressToTheBack() async throws {
        let clock = HTTPDNSManualClock()
        let provider = FakeResolver("p", .answer(["198.51.100.10", "198.51.100.11"], ttl: 600))
        let subject = engine([provider], clock: clock)
        _ = try await subject.resolve("k.example")
        subject.reportUnreachable(HTTPDNSIPAddress("198.51.100.10")!)
        let answer = try await subject.resolve("k.example")
        XCTAssertEqual(answer.addresses.map(\.description), ["198.51.100.11", "198.51.100.10"])
        clock.advance(by: 61)
        let later = try await subject.resolve("k.example")
        XCTAssertEqual(later.addresses.map(\.description), ["198.51.100.10", "198.51.100.11"])
    }

    /// A lookup that goes upstream orders its answer too: an address already reported unreachable
    /// comes last in the first answer for a name, not only in the cache's later ones.
    func testAnAddressReportedUnreachableComesLastInAFreshAnswer() async throws {
        let provider = FakeResolver("p", .answer(["198.51.100.12", "198.51.100.13"], ttl: 600))
        let subject = engine([provider])
        let before = try await subject.resolve("k2.example")
        XCTAssertEqual(before.addresses.map(\.description), ["198.51.100.12", "198.51.100.13"], "nothing cools down yet")
        subject.reportUnreachable(HTTPDNSIPAddress("198.51.100.12")!)
        let answer = try await subject.resolve("k3.example")
        XCTAssertFalse(answer.fromCache)
        XCTAssertEqual(answer.addresses.map(\.description), ["198.51.100.13", "198.51.100.12"])
    }

    func testHijackReportFindsBogonAnswer() async {
        let provider = FakeResolver("p", .answer(["198.51.100.20"], ttl: 60))
        let local = FakeResolver("system", .answer(["10.0.0.1"], ttl: nil))
        let subject = engine([provider], local: local)
        let report = await subject.checkHijack("l.example")
        XCTAssertEqual(report.verdict, .bogonAnswer)
        XCTAssertTrue(report.isHijack)
        XCTAssertEqual(report.reason, .bogonAnswer)
        XCTAssertEqual(report.local.addresses.map(\.description), ["10.0.0.1"])
        XCTAssertEqual(report.httpdns.addresses.map(\.description), ["198.51.100.20"])
    }

    func testHijackReportFindsHiddenName() async {
        let provider = FakeResolver("p", .answer(["198.51.100.21"], ttl: 60))
        let local = FakeResolver("system", .fail(.nameNotFound))
        let subject = engine([provider], local: local)
        let report = await subject.checkHijack("m.example")
        XCTAssertEqual(report.verdict, .localMissing)
        XCTAssertEqual(report.reason, .localMissing)
        XCTAssertEqual(report.local.errorCode, "nameNotFound")
    }

    func testHijackReportAgreement() async {
        let provider = FakeResolver("p", .answer(["198.51.100.22", "198.51.100.23"], ttl: 60))
        let local = FakeResolver("system", .answer(["198.51.100.23"], ttl: nil))
        let subject = engine([provider], local: local)
        let report = await subject.checkHijack("n.example")
        XCTAssertEqual(report.verdict, .agree)
        XCTAssertFalse(report.isHijack)
        XCTAssertNil(report.reason)
    }

    /// A disagreement is hijacking only for a stated reason, and the report says `strict` only when
    /// it was asked (allowing private answers is a reason of its own, not strictness).
    func testHijackReportDisagreementCountsOnlyForAReason() async throws {
        let provider = FakeResolver("p", .answer(["198.51.100.24"], ttl: 60))
        let local = FakeResolver("system", .answer(["203.0.113.24"], ttl: nil))
        let plain = await engine([provider], local: local).checkHijack("o.example")
        XCTAssertEqual(plain.verdict, .disagree)
        XCTAssertFalse(plain.isHijack)
        XCTAssertNil(plain.reason)
        XCTAssertFalse(plain.strict)

        let strict = await engine([provider], local: local).checkHijack("o.example", check: HTTPDNSHijackCheck(strict: true))
        XCTAssertEqual(strict.reason, .strictDisagreement)
        XCTAssertTrue(strict.isHijack && strict.strict)
        XCTAssertTrue(strict.description.contains("because the check is strict"), strict.description)

        let privateAllowed = await engine([provider], local: local) { $0.hygiene = HTTPDNSAnswerHygiene(allowPrivate: true) }
            .checkHijack("o.example")
        XCTAssertEqual(privateAllowed.reason, .privateAnswersAllowed)
        XCTAssertTrue(privateAllowed.isHijack)
        XCTAssertFalse(privateAllowed.strict)
        XCTAssertFalse(privateAllowed.description.contains("strict"), privateAllowed.description)
        XCTAssertTrue(privateAllowed.description.contains(HTTPDNSHijackReport.Reason.privateAnswersAllowed.explanation))

        // The JSON form carries the same conclusion, and a report whose "hijack" contradicts its reason
        // does not decode.
        let data = try JSONEncoder().encode(privateAllowed)
        XCTAssertEqual(try JSONDecoder().decode(HTTPDNSHijackReport.self, from: data), privateAllowed)
        var object = try XCTUnwrap(JSONSerialization.jsonObject(with: data) as? [String: Any])
        XCTAssertEqual(object["hijack"] as? Bool, true)
        XCTAssertEqual(object["strict"] as? Bool, false)
        object["hijack"] = false
        let forged = try JSONSerialization.data(withJSONObject: object)
        XCTAssertThrowsError(try JSONDecoder().decode(HTTPDNSHijackReport.self, from: forged))
    }
}

final class HTTPDNSEngineCancellationTests: XCTestCase {
    /// Both callers wait on one lookup held at a gate; the cancelled one must be out while the gate
    /// is still closed (a 3 s delay and a 100 ms sleep made that a race, and a waiter cancelled
    /// before it joined passed too).
    func testCancelledWaiterLeavesAtOnceWhileTheSharedLookupGoesOn() async throws {
        let gate = TestGate()
        let slow = FakeResolver("slow", .answer(["198.51.100.30"], ttl: 60), gate: gate)
        let subject = engine([slow]) { $0.timeouts.perAttempt = .seconds(30); $0.timeouts.httpdnsBudget = .seconds(30) }
        let lookupDone = HTTPDNSLock(false)
        let waiter = Task { try await subject.resolve("slow.example") }
        let survivor = Task {
            defer { lookupDone.withLock { $0 = true } }
            return try await subject.resolve("slow.example")
        }
        let joined = await pollUntil { subject.flightWaiterCount == 2 && gate.waitingCount == 1 }
        XCTAssertTrue(joined, "both callers never waited on the one lookup")
        waiter.cancel()
        do {
            _ = try await waiter.value
            XCTFail("the cancelled waiter got an answer")
        } catch let error as HTTPDNSError {
            XCTAssertEqual(error.code, .cancelled)
        }
        // An order, not a speed: the waiter is out while the lookup is still held.
        XCTAssertEqual(gate.waitingCount, 1, "the shared lookup is still running")
        XCTAssertFalse(lookupDone.withLock { $0 }, "left without waiting for the lookup")
        gate.open()
        let answer = try await survivor.value
        XCTAssertEqual(answer.addresses.map(\.description), ["198.51.100.30"])
        XCTAssertEqual(slow.calls, 1)
    }
}

final class HTTPDNSEngineStaticTests: XCTestCase {
    func testStaticEntriesAreTrustedAsGivenButServicesAreNot() async throws {
        let pins = HTTPDNSStaticResolver(["pinned.example": [HTTPDNSIPAddress("127.0.0.9")!]], name: "resolve")
        let service = FakeResolver("service", .answer(["127.0.0.9"], ttl: 60))
        let subject = engine([pins, service])
        let pinned = try await subject.resolve("pinned.example")
        XCTAssertEqual(pinned.addresses.map(\.description), ["127.0.0.9"])
        XCTAssertEqual(pinned.origin, .static)
        do {
            let answer = try await subject.resolve("other.example")
            XCTFail("a service's loopback answer was accepted: \(answer)")
        } catch let error as HTTPDNSError {
            XCTAssertEqual(error.attempts.map(\.error.code), [.nameNotFound, .bogonAnswer, .nameNotFound])
        }
    }
}
