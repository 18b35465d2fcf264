/// Builds a DNS message, compressing names against those already written (RFC 1035 §4.1.4).
///
/// Compression targets are the offsets of every name suffix written so far, compared with a new
/// name's suffixes on the wire itself, ignoring ASCII case, so `WWW.Example.com` may point at an
/// earlier `example.COM`; pointers only reach the first 16 KiB (14-bit offsets). A message holds a
/// handful of names, so a scan of the targets costs less than hashing each suffix into a table (it
/// was a tenth of the server's CPU per DoH answer).
struct DNSWireWriter {
    private(set) var bytes: [UInt8] = []
    /// Where each suffix written so far starts, and how many labels it has, in the order written.
    private var targets: [(offset: Int, labels: Int)] = []
    var section: DNSWireError.Section = .header
    var index: Int?
    var field: String?

    init() {
        bytes.reserveCapacity(512)
        targets.reserveCapacity(16)
    }

    func error(_ code: DNSWireError.Code) -> DNSWireError {
        DNSWireError(code, offset: bytes.count, section: section, index: index, field: field)
    }

    mutating func write(_ value: UInt8) {
        bytes.append(value)
    }

    mutating func write(_ value: UInt16) {
        bytes.append(UInt8(value >> 8))
        bytes.append(UInt8(truncatingIfNeeded: value))
    }

    mutating func write(_ value: UInt32) {
        write(UInt16(value >> 16))
        write(UInt16(truncatingIfNeeded: value))
    }

    mutating func write(_ data: [UInt8]) {
        bytes.append(contentsOf: data)
    }

    /// Overwrites a 16-bit value written earlier (RDLENGTH once the RDATA is known).
    mutating func patch(_ value: UInt16, at position: Int) {
        bytes[position] = UInt8(value >> 8)
        bytes[position + 1] = UInt8(truncatingIfNeeded: value)
    }

    /// Writes `name`, ending in a pointer to an earlier copy of its longest known suffix.
    ///
    /// - Parameter compress: false for names in RDATA of types not listed in RFC 1035 (RFC 3597 §4).
    mutating func write(_ name: DNSName, compress: Bool = true) {
        let labels = name.labels
        for start in labels.indices {
            // The earliest copy of this suffix, as a table keyed by the suffix would keep it.
            if compress, let target = target(for: labels, from: start) {
                write(UInt16(0xC000) | UInt16(target))
                return
            }
            // Without compression a suffix may be recorded twice; the earlier copy still wins.
            if bytes.count < 0x4000 {
                targets.append((bytes.count, labels.count - start))
            }
            let label = labels[start]
            write(UInt8(label.count))
            write(label)
        }
        write(UInt8(0))
    }

    /// The offset of the first suffix written that equals `labels[start...]`, ignoring ASCII case.
    private func target(for labels: [[UInt8]], from start: Int) -> Int? {
        let count = labels.count - start
        for target in targets where target.labels == count && matches(labels, from: start, at: target.offset) {
            return target.offset
        }
        return nil
    }

    /// True when the name written at `offset` (following pointers, which only lead backwards)
    /// spells `labels[start...]`.
    private func matches(_ labels: [[UInt8]], from start: Int, at offset: Int) -> Bool {
        var position = offset
        var index = start
        while true {
            let length = Int(bytes[position])
            if length & 0xC0 == 0xC0 {
                position = (length & 0x3F) << 8 | Int(bytes[position + 1])
                continue
            }
            if length == 0 { return index == labels.count }
            guard index < labels.count else { return false }
            let label = labels[index]
            guard label.count == length else { return false }
            var byte = 0
            for expected in label {
                guard DNSName.lowercased(bytes[position + 1 + byte]) == DNSName.lowercased(expected) else { return false }
                byte += 1
            }
            position += 1 + length
            index += 1
        }
    }
}
