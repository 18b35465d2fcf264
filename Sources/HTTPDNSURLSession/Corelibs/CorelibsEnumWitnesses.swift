/// The enum value witnesses of a type: which case a value holds, and its payload in place.
///
/// Workaround: a `Mirror` of one enum value looks up the type's field metadata and demangles the
/// case's payload type on every call; for the task registry's `_Behaviour` that cost about 30 µs per
/// request on corelibs' serial work queue under row 4a of the bench (more than the rest of
/// `startLoading`). The value witness table answers the same question with one call. Its layout is
/// the Swift runtime's ABI (`include/swift/ABI/ValueWitness.def`): the table pointer sits one word
/// before the type's metadata, and an enum's table adds `getEnumTag`, `destructiveProjectEnumData`
/// and `destructiveInjectEnumTag` after the eight common witnesses, size, stride, flags and extra
/// inhabitant count. The install check proves it on the probe's values against a `Mirror` of them.
struct CorelibsEnumWitnesses: @unchecked Sendable {  // C function pointers and a metadata pointer: immutable
    private typealias GetTag = @convention(c) (UnsafeRawPointer, UnsafeRawPointer) -> UInt32
    private typealias Project = @convention(c) (UnsafeMutableRawPointer, UnsafeRawPointer) -> Void
    private typealias Inject = @convention(c) (UnsafeMutableRawPointer, UInt32, UnsafeRawPointer) -> Void

    /// `MetadataKind::Enum` (1 | MetadataKindIsNonHeap).
    private static let enumKind: UInt = 0x201
    /// `ValueWitnessFlags::HasEnumWitnesses`.
    private static let hasEnumWitnesses: UInt32 = 0x0020_0000
    private static let word = MemoryLayout<UnsafeRawPointer>.size
    /// Offsets in the table: 8 witnesses, size, stride, then flags (UInt32), extra inhabitants (UInt32).
    private static let flagsOffset = 10 * word
    private static let getTagOffset = 10 * word + 8

    private let metadata: UnsafeRawPointer
    private let getTag: GetTag
    private let project: Project
    private let inject: Inject

    /// The witnesses of `type`; nil when it is not an enum (an optional included) or has none.
    init?(of type: Any.Type) {
        let metadata = unsafeBitCast(type, to: UnsafeRawPointer.self)
        guard metadata.load(as: UInt.self) == Self.enumKind else { return nil }
        let table = (metadata - Self.word).load(as: UnsafeRawPointer.self)
        guard table.load(fromByteOffset: Self.flagsOffset, as: UInt32.self) & Self.hasEnumWitnesses != 0 else { return nil }
        self.metadata = metadata
        getTag = table.load(fromByteOffset: Self.getTagOffset, as: GetTag.self)
        project = table.load(fromByteOffset: Self.getTagOffset + Self.word, as: Project.self)
        inject = table.load(fromByteOffset: Self.getTagOffset + 2 * Self.word, as: Inject.self)
    }

    /// The case `value` holds (its index among the type's cases).
    ///
    /// `value` must point at a value of the type these witnesses belong to.
    func tag(of value: UnsafeRawPointer) -> UInt32 {
        getTag(value, metadata)
    }

    /// Calls `body` with the payload of `value`'s case in place, then puts the case back.
    ///
    /// `value` must point at a value of the type these witnesses belong to, holding case `tag`; it is
    /// not a value of that type while `body` runs.
    func withPayload<Result>(of value: UnsafeMutableRawPointer, tag: UInt32, _ body: (UnsafeRawPointer) -> Result) -> Result {
        project(value, metadata)
        defer { inject(value, tag, metadata) }
        return body(UnsafeRawPointer(value))
    }
}
