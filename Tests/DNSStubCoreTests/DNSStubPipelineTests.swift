import DNSStubCore
import DNSWire
import HTTPDNSTestSupport
import XCTest

/// The DNS-over-TLS pipeline as a value, with explicit times and a seeded generator: IDs unique
/// among the queries held, answers matched by ID and question in any order, the in-flight limit,
/// deadlines, cancellation by ticket, a lost connection's queries resent once, and a sent query
/// failed by its ID (a DoQ stream the server reset). No sockets.
final class DNSStubPipelineTests: XCTestCase {
    typealias Pipeline = DNSStubPipeline<String>

    private func query(_ name: String, _ type: DNSRecordType = .A) throws -> (DNSMessage, [UInt8]) {
        let message = DNSMessage.makeQuery(name: try DNSName(name), type: type)
        return (message, try message.encode())
    }

    /// The messages `bytes` holds, framed as on TCP.
    private func frames(_ bytes: [UInt8]) throws -> [DNSMessage] {
        var messages: [DNSMessage] = []
        var rest = bytes[...]
        while rest.count >= 2 {
            let length = Int(rest[rest.startIndex]) << 8 | Int(rest[rest.startIndex + 1])
            messages.append(try DNSMessage(decoding: Array(rest.dropFirst(2).prefix(length))))
            rest = rest.dropFirst(2 + length)
        }
        XCTAssertTrue(rest.isEmpty, "whole frames")
        return messages
    }

    private func response(to query: DNSMessage) -> DNSMessage {
        var answer = query
        answer.isResponse = true
        return answer
    }

    @discardableResult
    private func enqueue(
        _ pipeline: inout Pipeline, _ name: String, deadline: Double = 10, generator: inout TestRandom
    ) throws -> Pipeline.Ticket {
        let (message, wire) = try query(name)
        return try XCTUnwrap(pipeline.enqueue(message, wire: wire, deadline: deadline, waiter: name, using: &generator))
    }

    func testFailSentGivesBackOnlyASentQueryOnce() throws {
        var generator = TestRandom()
        var pipeline = Pipeline()
        let ticket = try enqueue(&pipeline, "a.test", generator: &generator)
        XCTAssertNil(pipeline.failSent(id: ticket.id), "not written yet")
        _ = pipeline.takeUnsent(now: 1)
        XCTAssertEqual(pipeline.inFlight, 1)
        XCTAssertEqual(pipeline.failSent(id: ticket.id), "a.test")
        XCTAssertEqual(pipeline.inFlight, 0)
        XCTAssertTrue(pipeline.isEmpty)
        XCTAssertNil(pipeline.failSent(id: ticket.id), "over")
    }

    func testAnswersMatchByIDAndQuestionInAnyOrder() throws {
        var generator = TestRandom()
        var pipeline = Pipeline()
        for name in ["a.test", "b.test", "c.test"] { try enqueue(&pipeline, name, generator: &generator) }
        let sent = try frames(pipeline.takeUnsent(now: 0))
        XCTAssertEqual(sent.map { $0.questions[0].name.description }, ["a.test.", "b.test.", "c.test."], "oldest first")
        XCTAssertEqual(Set(sent.map(\.id)).count, 3, "distinct IDs")
        XCTAssertEqual(pipeline.inFlight, 3)
        XCTAssertEqual(pipeline.answer(response(to: sent[2])), "c.test")
        XCTAssertEqual(pipeline.answer(response(to: sent[0])), "a.test")
        var foreign = response(to: sent[1])
        foreign.questions = sent[0].questions
        XCTAssertNil(pipeline.answer(foreign), "an ID with another question is not its answer")
        XCTAssertNil(pipeline.answer(sent[1]), "a query, not a response")
        XCTAssertEqual(pipeline.answer(response(to: sent[1])), "b.test")
        XCTAssertNil(pipeline.answer(response(to: sent[1])), "answered once")
        XCTAssertTrue(pipeline.isEmpty)
        XCTAssertEqual(pipeline.inFlight, 0)
    }

    func testInFlightLimitHoldsTheRestUnsent() throws {
        var generator = TestRandom()
        var configuration = Pipeline.Configuration()
        configuration.maxInFlight = 2
        var pipeline = Pipeline(configuration: configuration)
        for index in 0..<5 { try enqueue(&pipeline, "q\(index).test", generator: &generator) }
        let first = try frames(pipeline.takeUnsent(now: 0))
        XCTAssertEqual(first.count, 2)
        XCTAssertTrue(pipeline.hasUnsent)
        XCTAssertTrue(pipeline.takeUnsent(now: 0).isEmpty, "full until one is answered")
        XCTAssertNotNil(pipeline.answer(response(to: first[0])))
        XCTAssertEqual(try frames(pipeline.takeUnsent(now: 0)).map { $0.questions[0].name.description }, ["q2.test."])
    }

    func testQueueIsBounded() throws {
        var generator = TestRandom()
        var configuration = Pipeline.Configuration()
        configuration.maxQueued = 3
        var pipeline = Pipeline(configuration: configuration)
        for index in 0..<3 { try enqueue(&pipeline, "q\(index).test", generator: &generator) }
        let (message, wire) = try query("q3.test")
        XCTAssertNil(pipeline.enqueue(message, wire: wire, deadline: 10, waiter: "q3", using: &generator))
        var empty = Pipeline()
        XCTAssertNil(empty.enqueue(message, wire: [1, 2], deadline: 10, waiter: "short", using: &generator), "not a DNS message")
    }

    func testDeadlinesExpire() throws {
        var generator = TestRandom()
        var pipeline = Pipeline()
        try enqueue(&pipeline, "early.test", deadline: 1, generator: &generator)
        try enqueue(&pipeline, "late.test", deadline: 3, generator: &generator)
        XCTAssertEqual(pipeline.nextDeadline, 1)
        XCTAssertEqual(pipeline.expire(now: 0.5).waiters, [])
        _ = pipeline.takeUnsent(now: 0.25)
        let early = pipeline.expire(now: 1)
        XCTAssertEqual(early.waiters, ["early.test"])
        XCTAssertEqual(early.earliestSent, 0.25, "written at 0.25: the connection must have carried something since")
        XCTAssertEqual(pipeline.inFlight, 1)
        XCTAssertEqual(pipeline.nextDeadline, 3)
        XCTAssertEqual(pipeline.expire(now: 5).waiters, ["late.test"])
        XCTAssertTrue(pipeline.isEmpty)
        XCTAssertEqual(pipeline.inFlight, 0)
    }

    func testQueriesNeverWrittenExpireWithoutBlamingTheConnection() throws {
        var generator = TestRandom()
        var pipeline = Pipeline()
        try enqueue(&pipeline, "waiting.test", deadline: 1, generator: &generator)
        let expired = pipeline.expire(now: 2)
        XCTAssertEqual(expired.waiters, ["waiting.test"])
        XCTAssertNil(expired.earliestSent)
        XCTAssertFalse(pipeline.hasUnsent)
    }

    func testCancellationTakesOnlyItsOwnQuery() throws {
        var generator = TestRandom()
        var pipeline = Pipeline()
        let ticket = try enqueue(&pipeline, "a.test", generator: &generator)
        XCTAssertEqual(pipeline.cancel(ticket), "a.test")
        XCTAssertNil(pipeline.cancel(ticket), "once")
        XCTAssertFalse(pipeline.hasUnsent, "a cancelled query is not sent")
        // The same ID given again: the old ticket must not cancel the new query.
        var stale = try enqueue(&pipeline, "b.test", generator: &generator)
        stale.serial = ticket.serial
        XCTAssertNil(pipeline.cancel(stale))
        XCTAssertEqual(try frames(pipeline.takeUnsent(now: 0)).count, 1)
    }

    func testLostConnectionResendsOnceThenFails() throws {
        var generator = TestRandom()
        var pipeline = Pipeline()
        try enqueue(&pipeline, "sent.test", generator: &generator)
        let first = try frames(pipeline.takeUnsent(now: 0))
        try enqueue(&pipeline, "waiting.test", generator: &generator)
        XCTAssertEqual(pipeline.connectionLost(), [], "resent, not failed")
        XCTAssertEqual(pipeline.inFlight, 0)
        let second = try frames(pipeline.takeUnsent(now: 0))
        XCTAssertEqual(second.map { $0.questions[0].name.description }, ["sent.test.", "waiting.test."], "the resent one first")
        XCTAssertEqual(second[0].id, first[0].id, "under the same ID")
        XCTAssertEqual(pipeline.answer(response(to: second[1])), "waiting.test")
        XCTAssertEqual(pipeline.connectionLost(), ["sent.test"], "a second loss fails it")
        XCTAssertTrue(pipeline.isEmpty)
    }

    func testFailAllEmptiesThePipeline() throws {
        var generator = TestRandom()
        var pipeline = Pipeline()
        try enqueue(&pipeline, "a.test", generator: &generator)
        _ = pipeline.takeUnsent(now: 0)
        try enqueue(&pipeline, "b.test", generator: &generator)
        XCTAssertEqual(Set(pipeline.failAll()), ["a.test", "b.test"])
        XCTAssertTrue(pipeline.isEmpty)
        XCTAssertFalse(pipeline.hasUnsent)
        XCTAssertEqual(pipeline.inFlight, 0)
    }
}
