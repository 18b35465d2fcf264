/// Big-endian reads of a ``DNSStubCacheFile`` body that never pass its end: every length and count
/// in the file is hostile until read through here.
struct DNSStubCacheFileReader {
    private let bytes: [UInt8]
    private var position = 0

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    var isAtEnd: Bool { position == bytes.count }

    mutating func integer(bytes count: Int) throws(DNSStubCacheFile.Rejection) -> UInt64 {
        var value: UInt64 = 0
        for byte in try self.bytes(count) { value = value << 8 | UInt64(byte) }
        return value
    }

    mutating func bytes(_ count: Int) throws(DNSStubCacheFile.Rejection) -> [UInt8] {
        guard count >= 0, bytes.count - position >= count else {
            throw DNSStubCacheFile.Rejection(reason: "truncated at byte \(position)")
        }
        defer { position += count }
        return Array(bytes[position..<(position + count)])
    }
}
