#if canImport(Glibc)
import Glibc
#endif
import CMaxMindDB
import Foundation
import HTTPDNSCore
import HTTPDNSOperations

/// A MaxMind DB file (GeoLite2/GeoIP2 Country or ASN, or any database in the MaxMind DB format),
/// read through Debian's libmaxminddb: an address's country ISO code (`country.iso_code`), its
/// autonomous system number (`autonomous_system_number`) and the prefix length of the record's
/// network (the netmask: every address in that network has the same record).
///
/// The file is read once at ``init(path:)`` into an anonymous memory file that libmaxminddb maps
/// (an operator who overwrites the file in place would otherwise change, or truncate into SIGBUS,
/// the mapping a running server reads), and unmapped when the last reference goes, so a reload can
/// open the new file, check it, and swap while requests in flight finish on the old one.
/// Lookups only read the mapping: libmaxminddb documents `MMDB_s` as safe for concurrent lookups once
/// opened, which is why the class is `@unchecked Sendable` with no lock.
package final class HTTPDNSMaxMindDB: @unchecked Sendable {
    /// What one lookup found.
    package struct Record: Sendable, Hashable {
        /// Whether a record covers the address (else the other fields are empty).
        package var found: Bool
        /// The prefix length of the network the record (or its absence) covers, in the address's
        /// own family (IPv4 bits for an IPv4 address, also in an IPv6 database).
        package var prefixLength: Int
        /// `country.iso_code` (`CN`), when the record has one.
        package var country: String?
        /// `autonomous_system_number`, when the record has one.
        package var asn: UInt32?
    }

    /// Largest database read: 512 MiB (GeoLite2-City, the largest MaxMind ships, is under 100 MiB).
    package static let maxFileBytes = 512 << 20

    /// The file's path, for errors and logs.
    package let path: String
    private let database: UnsafeMutablePointer<MMDB_s>

    /// Opens and maps `path`.
    ///
    /// - Throws: ``HTTPDNSServiceError`` `.invalidConfiguration` naming the file and libmaxminddb's
    ///   reason (missing, unreadable, not a MaxMind DB, corrupt metadata or search tree).
    package init(path: String) throws(HTTPDNSServiceError) {
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        if let size = attributes?[.size] as? Int, size > Self.maxFileBytes {
            throw HTTPDNSServiceError(.invalidConfiguration, "\(path): MaxMind DB larger than \(Self.maxFileBytes) bytes")
        }
        guard let contents = FileManager.default.contents(atPath: path) else {
            throw HTTPDNSServiceError(.invalidConfiguration, "\(path): cannot read the MaxMind DB")
        }
        let memory = cmaxminddb_memfd()
        guard memory >= 0 else {
            throw HTTPDNSServiceError(.invalidConfiguration, "\(path): cannot make an in-memory copy (memfd_create: errno \(errno))")
        }
        defer { close(memory) }
        let written = contents.withUnsafeBytes { raw -> Bool in
            var offset = 0
            while offset < raw.count {
                let count = Glibc.write(memory, raw.baseAddress! + offset, raw.count - offset)
                guard count > 0 else { return false }
                offset += count
            }
            return true
        }
        guard written else {
            throw HTTPDNSServiceError(.invalidConfiguration, "\(path): cannot make an in-memory copy (errno \(errno))")
        }
        let database = UnsafeMutablePointer<MMDB_s>.allocate(capacity: 1)
        let status = contents.isEmpty ? MMDB_INVALID_METADATA_ERROR : MMDB_open("/proc/self/fd/\(memory)", UInt32(MMDB_MODE_MMAP), database)
        guard status == MMDB_SUCCESS else {
            database.deallocate()
            throw HTTPDNSServiceError(.invalidConfiguration, "\(path): not a readable MaxMind DB: \(Self.reason(status))")
        }
        // The search tree and data section are checked lazily by lookups; looking up an address of
        // each family walks the tree's top and decodes a record, so that a truncated or garbled file
        // is refused here rather than at query time.
        for probe in [HTTPDNSIPAddress(bytes: [1, 1, 1, 1])!, HTTPDNSIPAddress("2001:db8::1")!] {
            if case .failure(let error) = Self.lookup(probe, in: database, path: path) {
                MMDB_close(database)
                database.deallocate()
                throw error
            }
        }
        self.path = path
        self.database = database
    }

    deinit {
        MMDB_close(database)
        database.deallocate()
    }

    /// 4 or 6, from the file's metadata.
    package var ipVersion: Int { Int(database.pointee.metadata.ip_version) }

    /// The file's `database_type` (`GeoLite2-Country`, `GeoLite2-ASN`, …).
    package var databaseType: String {
        database.pointee.metadata.database_type.map { String(cString: $0) } ?? ""
    }

    /// Looks `address` up (an IPv4-mapped IPv6 address as IPv4). An IPv6 address in an IPv4-only
    /// database finds nothing.
    ///
    /// - Throws: ``HTTPDNSServiceError`` `.invalidConfiguration` naming the file, when the database is
    ///   corrupt where the lookup led.
    package func lookup(_ address: HTTPDNSIPAddress) throws(HTTPDNSServiceError) -> Record {
        try Self.lookup(address, in: database, path: path).get()
    }

    private static func lookup(
        _ address: HTTPDNSIPAddress, in database: UnsafeMutablePointer<MMDB_s>, path: String
    ) -> Result<Record, HTTPDNSServiceError> {
        let address = address.ipv4Mapped ?? address
        let isV6 = address.family == .v6
        let ipVersion = Int(database.pointee.metadata.ip_version)
        if isV6, ipVersion == 4 { return .success(Record(found: false, prefixLength: 0)) }
        var bytes: (UInt64, UInt64) = (address.words.high.bigEndian, address.words.low.bigEndian)
        var result = cmaxminddb_result()
        let status = withUnsafeBytes(of: &bytes) { raw in
            cmaxminddb_lookup(database, raw.baseAddress!.assumingMemoryBound(to: UInt8.self), isV6 ? 1 : 0, &result)
        }
        guard status == MMDB_SUCCESS else {
            return .failure(HTTPDNSServiceError(.invalidConfiguration, "\(path): lookup of \(address) failed: \(Self.reason(status))"))
        }
        var prefixLength = Int(result.netmask)
        // libmaxminddb counts an IPv4 address's netmask in an IPv6 tree from the root, through the
        // 96 bits of ::/96 where IPv4 lives.
        if !isV6, ipVersion == 6 { prefixLength = max(0, prefixLength - 96) }
        prefixLength = min(prefixLength, isV6 ? 128 : 32)
        guard result.found != 0 else { return .success(Record(found: false, prefixLength: prefixLength)) }
        return .success(Record(found: true, prefixLength: prefixLength, country: country(result), asn: result.has_asn != 0 ? result.asn : nil))
    }

    /// Calls `body` with every network the database has a record for, and the record's country
    /// (upper case) and ASN, each record decoded once however many networks share it. IPv4 networks
    /// of an IPv6 database (under `::/96`, where libmaxminddb looks IPv4 up) come as IPv4 networks,
    /// and a network holding all of `::/96` comes as `0.0.0.0/0` too; `::ffff:0:0/96` (IPv4-mapped,
    /// looked up as IPv4) is skipped. The whole tree is read, so a corrupt or looping tree or record
    /// anywhere is an error here, not at query time.
    ///
    /// - Throws: ``HTTPDNSServiceError`` `.invalidConfiguration` naming the file and the reason.
    package func forEachNetwork(_ body: (HTTPDNSNetwork, _ country: String?, _ asn: UInt32?) -> Void) throws(HTTPDNSServiceError) {
        final class Walk {
            var records: [UInt32: (country: String?, asn: UInt32?)] = [:]
            var failure: Int32 = MMDB_SUCCESS
            let emit: (HTTPDNSNetwork, String?, UInt32?) -> Void
            let ipVersion: Int
            init(ipVersion: Int, emit: @escaping (HTTPDNSNetwork, String?, UInt32?) -> Void) {
                self.ipVersion = ipVersion
                self.emit = emit
            }
        }
        let status = withoutActuallyEscaping(body) { body -> Int32 in
            let walk = Walk(ipVersion: ipVersion, emit: body)
            // Aliases (6to4, Teredo) lead back into the IPv4 subtree, so a sound tree visits some
            // nodes more than once, but never more than a few times each.
            let visits = UInt64(database.pointee.metadata.node_count) * 4 + 16
            let status = withExtendedLifetime(walk) {
                cmaxminddb_walk(database, visits, { context, network, length, entry in
                    let walk = Unmanaged<Walk>.fromOpaque(context!).takeUnretainedValue()
                    guard let network, let entry else { return MMDB_CORRUPT_SEARCH_TREE_ERROR }
                    let fields: (country: String?, asn: UInt32?)
                    if let known = walk.records[entry.pointee.offset] {
                        fields = known
                    } else {
                        var result = cmaxminddb_result()
                        let status = cmaxminddb_entry_fields(entry, &result)
                        guard status == MMDB_SUCCESS else { return status }
                        fields = (HTTPDNSMaxMindDB.country(result), result.has_asn != 0 ? result.asn : nil)
                        walk.records[entry.pointee.offset] = fields
                    }
                    guard fields.country != nil || fields.asn != nil else { return 0 }
                    let bytes = Array(UnsafeBufferPointer(start: network, count: 16))
                    let length = Int(length)
                    if walk.ipVersion == 4 {
                        walk.emit(HTTPDNSNetwork(address: HTTPDNSIPAddress(bytes: Array(bytes[0..<4]))!, prefixLength: length), fields.country, fields.asn)
                        return 0
                    }
                    let v4Space = bytes[0..<12].allSatisfy { $0 == 0 }
                    if v4Space, length >= 96 {
                        walk.emit(HTTPDNSNetwork(address: HTTPDNSIPAddress(bytes: Array(bytes[12..<16]))!, prefixLength: length - 96), fields.country, fields.asn)
                    } else if v4Space {
                        // All of ::/96 lies inside: every IPv4 address.
                        walk.emit(HTTPDNSNetwork(address: HTTPDNSIPAddress(bytes: [0, 0, 0, 0])!, prefixLength: 0), fields.country, fields.asn)
                    }
                    // IPv4-mapped addresses are looked up as IPv4: nothing under ::ffff:0:0/96 is needed.
                    let mapped = length >= 96 && bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xff && bytes[11] == 0xff
                    if !mapped { walk.emit(HTTPDNSNetwork(v6Bytes: bytes, prefixLength: length), fields.country, fields.asn) }
                    return 0
                }, Unmanaged.passUnretained(walk).toOpaque())
            }
            return status
        }
        guard status == MMDB_SUCCESS else {
            throw HTTPDNSServiceError(.invalidConfiguration, "\(path): the search tree cannot be read: \(Self.reason(status))")
        }
    }

    /// The record's country code, upper case; nil when it has none or not two or three letters.
    private static func country(_ result: cmaxminddb_result) -> String? {
        withUnsafeBytes(of: result.country) { raw -> String? in
            let bytes = raw.prefix { $0 != 0 }
            guard bytes.count >= 2, bytes.allSatisfy({ ($0 >= 0x41 && $0 <= 0x5a) || ($0 >= 0x61 && $0 <= 0x7a) }) else { return nil }
            return String(decoding: bytes, as: UTF8.self).uppercased()
        }
    }

    private static func reason(_ status: Int32) -> String {
        MMDB_strerror(status).map { String(cString: $0) } ?? "error \(status)"
    }
}
