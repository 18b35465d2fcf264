import DNSWire

/// The queries of one DNS-over-TLS upstream (RFC 7858), pipelined on one connection: each gets an
/// ID that no other query in the pipeline holds, answers are matched by ID and question in any
/// order (RFC 7766 §6.2.1.1), and a query lost with its connection is sent once more on the next
/// one before it fails.
///
/// A value with an explicit `now` (seconds on a monotonic clock) and injected randomness; the
/// upstream keeps one behind a lock and its I/O thread sends what ``takeUnsent()`` gives, feeds back
/// answers, losses and the time, and hands each `Waiter` it gets back its result.
package struct DNSStubPipeline<Waiter: Sendable>: Sendable {
    /// Limits, each with its default.
    package struct Configuration: Sendable, Hashable {
        /// Queries written on one connection and not yet answered; more wait unsent. Default 128.
        package var maxInFlight: Int = 128
        /// Queries held in all, in flight and waiting; more are refused at once. Default 4,096.
        package var maxQueued: Int = 4096

        package init() {}
    }

    /// What ``expire(now:)`` found.
    package struct Expired: Sendable {
        /// The waiters of the queries whose deadline passed.
        package var waiters: [Waiter]
        /// When the earliest of them that had been written was written: when nothing arrived on
        /// the connection since, the connection looks dead (a NAT that forgot it, a server that
        /// stopped reading) and is better replaced than waited on.
        package var earliestSent: Double?
    }

    /// A query held: its ID on the wire, and a serial number no other query gets (an ID is given
    /// again once its query is over, so a late cancellation must not reach the next one).
    package struct Ticket: Sendable, Hashable {
        package var id: UInt16
        package var serial: UInt64
    }

    /// One query held. Not nested, and its waiter kept as `any Sendable`: the pipeline is used from
    /// another module, where its methods run unspecialised, and a storage type that depends on
    /// `Waiter` made every call (the I/O loop asks several on each turn) build that type's metadata
    /// from its mangled name (measured: 14 % of a DoT stub's samples on cold misses). Its storage
    /// is now one concrete type; only a waiter going in or out touches `Waiter`.
    private typealias Entry = DNSStubPipelineEntry

    package let configuration: Configuration
    private var serials: UInt64 = 0
    private var entries: [UInt16: Entry] = [:]
    /// IDs to send, oldest first.
    private var unsent: [UInt16] = []
    /// Queries written on the current connection and not answered.
    package private(set) var inFlight = 0

    package init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// No query held.
    package var isEmpty: Bool { entries.isEmpty }

    /// Queries waiting to be written (a connection is needed).
    package var hasUnsent: Bool { !unsent.isEmpty }

    /// The earliest deadline of the queries held.
    package var nextDeadline: Double? { entries.values.lazy.map(\.deadline).min() }

    /// Holds `query` under a fresh ID until it is answered or `deadline` passes.
    /// - Parameter wire: `query` encoded (any ID: the one given is written over it).
    /// - Returns: what names the query for ``cancel(_:)``, or nil when ``Configuration/maxQueued``
    ///   queries are held already or `wire` is no DNS message that fits a frame.
    package mutating func enqueue(
        _ query: DNSMessage, wire: [UInt8], deadline: Double, waiter: Waiter, using generator: inout some RandomNumberGenerator
    ) -> Ticket? {
        guard entries.count < min(configuration.maxQueued, 1 << 15), wire.count >= 12, wire.count <= Int(UInt16.max) else { return nil }
        var id = UInt16.random(in: 0...UInt16.max, using: &generator)
        while entries[id] != nil { id = UInt16.random(in: 0...UInt16.max, using: &generator) }
        var frame = [UInt8(wire.count >> 8), UInt8(wire.count & 0xFF)] + wire
        frame[2] = UInt8(id >> 8)
        frame[3] = UInt8(id & 0xFF)
        var query = query
        query.id = id
        serials &+= 1
        entries[id] = Entry(frame: frame, query: query, deadline: deadline, waiter: waiter, serial: serials)
        unsent.append(id)
        return Ticket(id: id, serial: serials)
    }

    /// The frames to write now, oldest first, as many as ``Configuration/maxInFlight`` allows;
    /// they count as sent on the current connection at `now`.
    package mutating func takeUnsent(now: Double) -> [UInt8] {
        var bytes: [UInt8] = []
        var taken = 0
        while taken < unsent.count, inFlight < configuration.maxInFlight {
            let id = unsent[taken]
            taken += 1
            entries[id]?.sentAt = now
            inFlight += 1
            bytes += entries[id]?.frame ?? []
        }
        unsent.removeFirst(taken)
        return bytes
    }

    /// The waiter of the query `message` answers: a response with a held ID that was sent and the
    /// same question; anything else (a late answer to a cancelled query) is ignored and nil.
    package mutating func answer(_ message: DNSMessage) -> Waiter? {
        guard message.isResponse, let entry = entries[message.id], entry.sent, message.hasSameQuestions(as: entry.query) else { return nil }
        entries[message.id] = nil
        inFlight -= 1
        return Self.waiter(entry)
    }

    /// The query `id` was written and its exchange failed by itself (a DNS-over-QUIC stream the
    /// server reset, RFC 9250 §4.3): its waiter, or nil when no such query was sent.
    package mutating func failSent(id: UInt16) -> Waiter? {
        guard let entry = entries[id], entry.sent else { return nil }
        entries[id] = nil
        inFlight -= 1
        return Self.waiter(entry)
    }

    /// Gives up the query `ticket` names (its caller cancelled it): its waiter, or nil when it was over.
    package mutating func cancel(_ ticket: Ticket) -> Waiter? {
        let id = ticket.id
        guard entries[id]?.serial == ticket.serial, let entry = entries.removeValue(forKey: id) else { return nil }
        // Its ID may be given again at once: it must not stay in the queue to send.
        if entry.sent { inFlight -= 1 } else { unsent.removeAll { $0 == id } }
        return Self.waiter(entry)
    }

    /// Whether a query's deadline is past at `now` (``expire(now:)`` would give it up).
    package func hasExpired(now: Double) -> Bool {
        entries.values.contains { $0.deadline <= now }
    }

    /// Gives up the queries whose deadline is past.
    package mutating func expire(now: Double) -> Expired {
        guard hasExpired(now: now) else { return Expired(waiters: [], earliestSent: nil) }
        let expired = entries.filter { $0.value.deadline <= now }
        for (id, entry) in expired {
            entries[id] = nil
            if entry.sent { inFlight -= 1 }
        }
        if !expired.isEmpty { unsent.removeAll { entries[$0] == nil } }
        return Expired(waiters: expired.values.compactMap(Self.waiter), earliestSent: expired.values.compactMap(\.sentAt).min())
    }

    /// The connection closed or failed: each query it carried is sent again on the next one
    /// (before those never sent), unless it was already resent once; those fail.
    /// - Returns: the waiters of the queries that fail.
    package mutating func connectionLost() -> [Waiter] {
        var failed: [Waiter] = []
        var again: [UInt16] = []
        for (id, entry) in entries.sorted(by: { $0.value.deadline < $1.value.deadline }) where entry.sent {
            if entry.resent {
                if let waiter = Self.waiter(entry) { failed.append(waiter) }
                entries[id] = nil
            } else {
                entries[id]?.sentAt = nil
                entries[id]?.resent = true
                again.append(id)
            }
        }
        unsent = again + unsent
        inFlight = 0
        return failed
    }

    /// The waiter `entry` holds: always a `Waiter`, which ``enqueue(_:wire:deadline:waiter:using:)``
    /// put there (nil cannot happen).
    private static func waiter(_ entry: Entry) -> Waiter? {
        entry.waiter as? Waiter
    }

    /// No connection could be made: every query held fails.
    /// - Returns: their waiters.
    package mutating func failAll() -> [Waiter] {
        let waiters = entries.values.compactMap(Self.waiter)
        entries = [:]
        unsent = []
        inFlight = 0
        return waiters
    }
}

/// One query a ``DNSStubPipeline`` holds (see ``DNSStubPipeline/Entry`` for why it stands alone).
struct DNSStubPipelineEntry: Sendable {
    /// The query with its ID, framed for TCP (RFC 1035 §4.2.2).
    var frame: [UInt8]
    var query: DNSMessage
    var deadline: Double
    /// The pipeline's `Waiter`.
    var waiter: any Sendable
    var serial: UInt64
    /// When it was written on the current connection; nil while it waits to be.
    var sentAt: Double?
    /// Sent on a connection that was lost; the next loss fails it.
    var resent = false

    var sent: Bool { sentAt != nil }
}
