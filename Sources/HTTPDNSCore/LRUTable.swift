/// A bounded table of values by key that forgets the least recently used first: the one LRU the
/// engine's cache policy (``HTTPDNSCachePolicy``) and the stub's wire cache (`DNSStubCache`) keep
/// their entries in (as Unbound's `lruhash` serves every cache there).
///
/// The nodes sit in one array, linked into a recency list by index, with a free list of slots and
/// one dictionary from key to slot. Finding an entry is one hash; making it most recently used
/// moves indices and allocates nothing; storing allocates only when the array grows. A ``Slot``
/// names an entry between a ``slot(of:)`` and the next change of the table, so a caller that looks
/// an entry up, decides, and then uses it or makes it recent hashes its key once.
///
/// A plain value: the caller owns the lock (style rule 6).
@_spi(HTTPDNSPackage) public struct LRUTable<Key: Hashable, Value> {
    /// Where an entry sits; valid until the table next changes shape (an insert or a removal).
    public struct Slot: Hashable, Sendable {
        @usableFromInline let index: Int

        @usableFromInline init(index: Int) {
            self.index = index
        }
    }

    @usableFromInline struct Node {
        @usableFromInline var key: Key
        /// Nil in a free slot, so that a removed value's storage goes at once.
        @usableFromInline var value: Value?
        @usableFromInline var previous: Int
        @usableFromInline var next: Int

        @usableFromInline init(key: Key, value: Value?, previous: Int, next: Int) {
            self.key = key
            self.value = value
            self.previous = previous
            self.next = next
        }
    }

    /// Most entries kept, at least 1; storing one more forgets the least recently used.
    public let capacity: Int
    // Visible to inlined code only (`@usableFromInline`): the stub's wire cache uses the table from
    // another module, where an unspecialised generic table costs every lookup witness-table calls.
    // The type is public under `@_spi(HTTPDNSPackage)` rather than `package` because Swift 6.3
    // serialises no body of an `@inlinable package` declaration: the stub's module called the
    // generic entry points (seen in its SIL and symbols). SPI keeps it out of the public API.
    @usableFromInline var index: [Key: Int] = [:]
    @usableFromInline var nodes: [Node] = []
    @usableFromInline var freeSlots: [Int] = []
    @usableFromInline var head = -1  // most recently used
    @usableFromInline var tail = -1  // least recently used

    /// An empty table of at most `capacity` entries (1 when less).
    @inlinable
    public init(capacity: Int) {
        self.capacity = max(capacity, 1)
    }

    /// The number of entries.
    @inlinable
    public var count: Int { index.count }

    /// Where `key`'s entry sits, without making it recently used.
    @inlinable
    public func slot(of key: Key) -> Slot? {
        guard let slot = index[key] else { return nil }
        return Slot(index: slot)
    }

    /// The value in `slot`, read or changed in place (the recency order stays).
    @inlinable
    public subscript(slot: Slot) -> Value {
        get { nodes[slot.index].value! }
        _modify { yield &nodes[slot.index].value! }
    }

    /// `key`'s value without making it recently used.
    @inlinable
    public func peek(_ key: Key) -> Value? {
        index[key].flatMap { nodes[$0].value }
    }

    /// Makes the entry in `slot` the most recently used.
    @inlinable
    public mutating func touch(_ slot: Slot) {
        let slot = slot.index
        guard slot != head else { return }
        unlink(slot)
        nodes[slot].next = head
        if head >= 0 { nodes[head].previous = slot }
        head = slot
        if tail < 0 { tail = slot }
    }

    /// Stores `value` under `key` as the most recently used entry (replacing one there), then
    /// forgets the least recently used entries beyond ``capacity``.
    @inlinable
    public mutating func set(_ value: Value, forKey key: Key) {
        if let slot = index[key] {
            nodes[slot].value = value
            touch(Slot(index: slot))
            return
        }
        let node = Node(key: key, value: value, previous: -1, next: head)
        let slot: Int
        if let free = freeSlots.popLast() {
            nodes[free] = node
            slot = free
        } else {
            nodes.append(node)
            slot = nodes.count - 1
        }
        if head >= 0 { nodes[head].previous = slot }
        head = slot
        if tail < 0 { tail = slot }
        index[key] = slot
        while index.count > capacity {
            remove(nodes[tail].key)
        }
    }

    /// Forgets `key`'s entry.
    /// - Returns: its value, if there was one.
    @inlinable @discardableResult
    public mutating func remove(_ key: Key) -> Value? {
        guard let slot = index.removeValue(forKey: key) else { return nil }
        unlink(slot)
        freeSlots.append(slot)
        defer { nodes[slot].value = nil }
        return nodes[slot].value
    }

    /// Forgets every entry.
    @inlinable
    public mutating func removeAll() {
        index.removeAll()
        nodes.removeAll()
        freeSlots.removeAll()
        head = -1
        tail = -1
    }

    /// Every entry, most recently used first.
    @inlinable
    public var elements: [(key: Key, value: Value)] {
        var result: [(key: Key, value: Value)] = []
        result.reserveCapacity(index.count)
        var slot = head
        while slot >= 0 {
            result.append((nodes[slot].key, nodes[slot].value!))
            slot = nodes[slot].next
        }
        return result
    }

    @inlinable
    mutating func unlink(_ slot: Int) {
        let previous = nodes[slot].previous
        let next = nodes[slot].next
        if previous >= 0 { nodes[previous].next = next } else if head == slot { head = next }
        if next >= 0 { nodes[next].previous = previous } else if tail == slot { tail = previous }
        nodes[slot].previous = -1
        nodes[slot].next = -1
    }
}

extension LRUTable: Sendable where Key: Sendable, Value: Sendable {}
extension LRUTable.Node: Sendable where Key: Sendable, Value: Sendable {}
