import Foundation
import HTTPDNSCore
import HTTPDNSOperations

/// A CIDR list file, as carriers and registries publish their address space: one network a line
/// (``HTTPDNSNetwork``: `1.0.1.0/24`, `240e::/20`, or a bare address), `#` comments on a line of their
/// own or after a network, blank lines, LF or CRLF line ends.
///
/// The file is read whole or refused: the first bad line is named `file:line: reason`, so an
/// operator never serves half a list. Bounded by ``maxBytes`` and ``maxNetworks``.
package enum HTTPDNSNetworkList {
    /// Largest list file read: 32 MiB (a full BGP table of IPv4 and IPv6 prefixes is under 20 MiB).
    package static let maxBytes = 32 << 20
    /// Most networks in one list: 2,000,000.
    package static let maxNetworks = 2_000_000
    /// Longest line, comment included: 1,024 bytes.
    package static let maxLineBytes = 1_024

    /// Parses a list's bytes.
    ///
    /// - Parameters:
    ///   - bytes: the file's contents.
    ///   - source: how errors name the file (its path).
    /// - Returns: the networks in file order (duplicates kept; the table keeps the first).
    /// - Throws: ``HTTPDNSServiceError`` `.invalidConfiguration`, `source:line: reason`: a line that is
    ///   not a network (garbage, a bad prefix length, bits set past the prefix), a line longer than
    ///   ``maxLineBytes``, bytes outside printable ASCII, or a list past ``maxBytes`` or ``maxNetworks``.
    package static func parse(_ bytes: [UInt8], source: String) throws(HTTPDNSServiceError) -> [HTTPDNSNetwork] {
        guard bytes.count <= maxBytes else {
            throw HTTPDNSServiceError(.invalidConfiguration, "\(source): list larger than \(maxBytes) bytes")
        }
        var networks: [HTTPDNSNetwork] = []
        var lineNumber = 0
        var start = 0
        while start < bytes.count {
            lineNumber += 1
            let end = bytes[start...].firstIndex(of: 0x0a) ?? bytes.count
            let line = bytes[start..<end]
            start = end + 1
            func fail(_ reason: String) -> HTTPDNSServiceError {
                HTTPDNSServiceError(.invalidConfiguration, "\(source):\(lineNumber): \(reason)")
            }
            guard line.count <= maxLineBytes else { throw fail("line longer than \(maxLineBytes) bytes") }
            // The comment goes first: whatever follows `#` is the operator's own text.
            var content = line[..<(line.firstIndex(of: UInt8(ascii: "#")) ?? line.endIndex)]
            if content.last == 0x0d, content.endIndex == line.endIndex { content = content.dropLast() }
            while let first = content.first, first == 0x20 || first == 0x09 { content = content.dropFirst() }
            while let last = content.last, last == 0x20 || last == 0x09 || last == 0x0d { content = content.dropLast() }
            guard !content.isEmpty else { continue }
            guard content.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else {
                throw fail("not a CIDR network: \(shown(content))")
            }
            let text = String(decoding: content, as: UTF8.self)
            switch HTTPDNSNetwork.parse(Substring(text)) {
            case .success(let network):
                guard networks.count < maxNetworks else { throw fail("more than \(maxNetworks) networks") }
                networks.append(network)
            case .failure(let fault):
                throw fail("\(fault.reason): \(shown(content))")
            }
        }
        return networks
    }

    /// Reads and parses the list at `path` (see ``parse(_:source:)``); errors name `path`.
    package static func read(path: String) throws(HTTPDNSServiceError) -> [HTTPDNSNetwork] {
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        if let size = attributes?[.size] as? Int, size > maxBytes {
            throw HTTPDNSServiceError(.invalidConfiguration, "\(path): list larger than \(maxBytes) bytes")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw HTTPDNSServiceError(.invalidConfiguration, "\(path): cannot read the list")
        }
        return try parse([UInt8](data), source: path)
    }

    /// A line's text as an error shows it: printable ASCII, at most 60 bytes, quoted.
    private static func shown(_ bytes: ArraySlice<UInt8>) -> String {
        let printable = bytes.prefix(60).map { $0 >= 0x20 && $0 < 0x7f ? Character(UnicodeScalar($0)) : "?" }
        return "\"" + String(printable) + (bytes.count > 60 ? "…" : "") + "\""
    }
}
