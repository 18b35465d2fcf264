import HTTPDNSCore
/// systemd-resolved's settings that decide where names go (resolved.conf(5), `[Resolve]`), merged
/// from `/etc/systemd/resolved.conf` and then each `/etc/systemd/resolved.conf.d/*.conf` in
/// lexical order, as resolved merges them.
///
/// resolved.conf(5): `DNS=`, `FallbackDNS=` and `Domains=` are lists, each assignment adds to the
/// list and an empty one resets it; `DNSStubListener=` is `yes`, `no`, `udp` or `tcp`, the last one
/// wins. A server is `ADDRESS[:PORT][%INTERFACE][#SERVERNAME]`, IPv6 with a port in brackets
/// (`[::1]:5353`); the port defaults to 53.
package struct DNSStubResolvedConf: Sendable, Hashable {
    /// One `DNS=` or `FallbackDNS=` entry.
    package struct Server: Sendable, Hashable, CustomStringConvertible {
        package var address: HTTPDNSIPAddress
        package var port: UInt16

        /// Parses `ADDRESS[:PORT][%INTERFACE][#SERVERNAME]`; nil for anything else.
        package init?(parsing text: String) {
            var rest = Substring(text.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
            if let percent = rest.firstIndex(of: "%") { rest = rest[..<percent] }
            var port: UInt16 = 53
            var host = rest
            if rest.hasPrefix("[") {
                guard let close = rest.firstIndex(of: "]") else { return nil }
                host = rest[rest.index(after: rest.startIndex)..<close]
                let tail = rest[rest.index(after: close)...]
                if !tail.isEmpty {
                    guard tail.hasPrefix(":"), let value = UInt16(tail.dropFirst()), value > 0 else { return nil }
                    port = value
                }
            } else if rest.filter({ $0 == ":" }).count == 1, let colon = rest.firstIndex(of: ":") {
                // One colon: IPv4 with a port; more: a bare IPv6 address (no port without brackets).
                guard let value = UInt16(rest[rest.index(after: colon)...]), value > 0 else { return nil }
                host = rest[..<colon]
                port = value
            }
            guard let address = HTTPDNSIPAddress(String(host)) else { return nil }
            self.address = address
            self.port = port
        }

        package init(address: HTTPDNSIPAddress, port: UInt16 = 53) {
            self.address = address
            self.port = port
        }

        /// `127.0.0.153:53`, `[::1]:53`.
        package var description: String { "\(address.uriText):\(port)" }
    }

    /// `DNS=`: resolved's own servers, asked besides each link's (from DHCP or networkd).
    package var dns: [Server] = []
    /// `FallbackDNS=`; nil when never set (resolved then has compiled-in public servers). Used only
    /// when no server at all is known, neither `DNS=` nor a link's.
    package var fallbackDNS: [Server]?
    /// `Domains=`; `~.` makes `DNS=` the route for every name no link claims (resolved.conf(5)).
    package var domains: [String] = []
    /// `DNSStubListener=`, lowercased; default `yes` (resolved answers on 127.0.0.53 and .54).
    package var stubListener = "yes"
    /// Entries that are not servers, and lines outside `key=value`, for the report.
    package var ignored: [String] = []

    /// Merges `texts` in the order given (the main file first, then the drop-ins sorted).
    package init(parsing texts: [String]) {
        for text in texts {
            var inResolve = false
            for raw in text.split(whereSeparator: \.isNewline) {
                let line = raw.confTrimmed
                guard let first = line.first, first != "#", first != ";" else { continue }
                if first == "[" {
                    inResolve = line == "[Resolve]"
                    continue
                }
                guard inResolve else { continue }
                guard let equals = line.firstIndex(of: "=") else {
                    ignored.append(line)
                    continue
                }
                let key = line[..<equals].confTrimmed
                let words = line[line.index(after: equals)...].split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
                switch key {
                case "DNS": dns = merge(dns, words)
                case "FallbackDNS": fallbackDNS = merge(fallbackDNS ?? [], words)
                case "Domains": domains = words.isEmpty ? [] : domains + words
                case "DNSStubListener": stubListener = words.first?.lowercased() ?? "yes"
                default: break
                }
            }
        }
    }

    /// `list` with `words` added, or emptied when there are none.
    private mutating func merge(_ list: [Server], _ words: [String]) -> [Server] {
        guard !words.isEmpty else { return [] }
        var list = list
        for word in words {
            if let server = Server(parsing: word) { list.append(server) } else { ignored.append(word) }
        }
        return list
    }

    /// Where systemd's configuration lives, highest priority first.
    package static let directories = ["/etc/systemd", "/run/systemd", "/usr/local/lib/systemd", "/usr/lib/systemd"]

    /// The files resolved reads, in the order it applies them (systemd's "Configuration Directories
    /// and Precedence"): `resolved.conf` from the first of ``directories`` that has one, then every
    /// `resolved.conf.d/*.conf`, a name in a higher directory hiding the same name in lower ones,
    /// sorted by file name whatever their directory (the last one read wins).
    /// - Parameters:
    ///   - exists: whether a file exists at a path.
    ///   - list: the names in a directory (none when it does not exist).
    package static func files(exists: (String) -> Bool, list: (String) -> [String]) -> [String] {
        var paths = directories.map { "\($0)/resolved.conf" }.first(where: exists).map { [$0] } ?? []
        var dropIns: [String: String] = [:]
        for directory in directories.reversed() {
            for name in list("\(directory)/resolved.conf.d") where name.hasSuffix(".conf") {
                dropIns[name] = "\(directory)/resolved.conf.d/\(name)"
            }
        }
        paths += dropIns.keys.sorted().map { dropIns[$0]! }
        return paths
    }

    /// Whether `Domains=` holds `~.`, the routing domain that matches every name.
    package var routesEveryName: Bool { domains.contains("~.") }

    /// Whether resolved answers on 127.0.0.53 at all.
    package var stubListenerEnabled: Bool { !["no", "false", "0", "off"].contains(stubListener) }
}
