import HTTPDNSCore
/// What glibc reads in `/etc/resolv.conf` (resolv.conf(5)), as far as `httpdns stub --check`
/// needs it: the nameservers it asks, the search list and the options.
///
/// glibc's rules, kept here: a line whose first character is `#` or `;` is a comment; unknown
/// keywords and malformed lines are ignored (so they are listed in ``ignored``, not fatal); only
/// the first three valid `nameserver` lines count (MAXNS); with none at all glibc asks the server
/// on the local machine, 127.0.0.1 port 53; the port is always 53.
package struct DNSStubResolvConf: Sendable, Hashable {
    /// glibc's MAXNS: nameservers past the third are never asked.
    package static let maxNameservers = 3

    /// The valid `nameserver` addresses in file order (a `%scope` suffix removed), all of them.
    package var nameservers: [HTTPDNSIPAddress] = []
    /// The last `search` or `domain` line's domains.
    package var search: [String] = []
    /// The `options` words (`edns0`, `timeout:2`, …).
    package var options: [String] = []
    /// Lines glibc ignores: unknown keywords, nameservers that are not addresses, (trimmed).
    package var ignored: [String] = []

    /// Parses the file's text; never fails, as glibc does not.
    package init(parsing text: String) {
        for raw in text.split(whereSeparator: \.isNewline) {
            let line = raw.confTrimmed
            guard let first = line.first, first != "#", first != ";" else { continue }
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            switch words[0] {
            case "nameserver" where words.count >= 2:
                let text = words[1].split(separator: "%", maxSplits: 1).first.map(String.init) ?? ""
                if let address = HTTPDNSIPAddress(text) { nameservers.append(address) } else { ignored.append(line) }
            case "search" where words.count >= 2, "domain" where words.count >= 2:
                search = Array(words.dropFirst())
            case "options":
                options += words.dropFirst()
            case "sortlist":
                break
            default:
                ignored.append(line)
            }
        }
    }

    /// The servers glibc really asks, in order: the first three, or 127.0.0.1 when none is listed.
    package var effectiveNameservers: [HTTPDNSIPAddress] {
        nameservers.isEmpty ? [HTTPDNSIPAddress("127.0.0.1")!] : Array(nameservers.prefix(Self.maxNameservers))
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs.
    var confTrimmed: String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" }
        guard let start = firstIndex(where: { !isSpace($0) }), let end = lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(self[start...end])
    }
}
