import HTTPDNSCore

extension HTTPDNSZone {
    /// The first CNAME loop or over-long chain in the zone, as the key it starts from and a message.
    ///
    /// Each CNAME target is followed the way a query follows it (``match(_:)``: exact name, then the
    /// closest wildcard), so a wildcard whose target falls under itself is a loop too. Lengths are
    /// memoised: every entry is walked once, whatever the zone's shape.
    func chainFault() -> (name: String, detail: String)? {
        // Links from each key, once its chain is known to end; `nil` while it is being walked.
        var lengths: [String: Int?] = [:]
        for name in entries.keys.sorted() where entries[name]?.cname != nil {
            var path: [String] = []
            var current = name
            var tail = 0
            while true {
                if let known = lengths[current] {
                    guard let known else {
                        // Back at a key on the current path: a loop.
                        let start = path.firstIndex(of: current) ?? 0
                        let cycle = (path[start...] + [current]).joined(separator: " → ")
                        return (name, "\(Self.shown(name)): CNAME loop \(cycle)")
                    }
                    tail = known
                    break
                }
                lengths[current] = .some(nil)
                path.append(current)
                guard let target = entries[current]?.cname, let next = match(target) else { break }
                current = next.key
            }
            // `path` ends with the last key walked; its own link counts when it is an alias.
            for (index, key) in path.enumerated().reversed() {
                let links = (entries[key]?.cname == nil ? 0 : 1) + (index == path.count - 1 ? tail : lengths[path[index + 1]]!!)
                lengths[key] = links
                guard links <= Self.maxCNAMEChain else {
                    return (key, "\(Self.shown(key)): CNAME chain of \(links) links, at most \(Self.maxCNAMEChain)")
                }
            }
        }
        return nil
    }
}
