/// The evidence from one hijack check: what LocalDNS said, what HTTPDNS said, what connecting to
/// their addresses showed, the verdict and the conclusion (``isHijack``).
///
/// ``verdict`` compares the answers alone; ``isHijack`` is the conclusion the library and the
/// `httpdns check` command share: the verdict's own hijack cases (bogon answer, hidden name), plus a
/// confirmed probe (LocalDNS's address cannot present a certificate for the name while HTTPDNS's
/// can), plus — when ``strict`` — any disagreement a probe did not clear.
public struct HTTPDNSHijackReport: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The conclusion.
    public enum Verdict: String, Sendable, Hashable, Codable {
        /// Both sides share at least one address.
        case agree
        /// The answers share no address, but LocalDNS gave public addresses (CDNs do this too).
        case disagree
        /// LocalDNS answered with bogon addresses while HTTPDNS gave public ones: hijacked.
        case bogonAnswer
        /// LocalDNS says the name does not exist (or gave nothing) while HTTPDNS has addresses: blocked.
        case localMissing
        /// HTTPDNS could not answer; nothing can be concluded.
        case inconclusive

        /// True for verdicts that indicate hijacking or blocking.
        public var isHijack: Bool { self == .bogonAnswer || self == .localMissing }
    }

    /// One side of the comparison.
    public struct Side: Sendable, Hashable, Codable {
        /// The resolver that answered.
        public var source: String
        /// Its addresses (empty when it failed).
        public var addresses: [HTTPDNSIPAddress]
        /// The TTL it gave, when it answered.
        public var ttl: Int?
        /// The error, when it failed (``HTTPDNSError`` description).
        public var error: String?
        /// The error code, when it failed.
        public var errorCode: String?

        package init(source: String, addresses: [HTTPDNSIPAddress], ttl: Int? = nil, error: String? = nil, errorCode: String? = nil) {
            self.source = source
            self.addresses = addresses
            self.ttl = ttl
            self.error = error
            self.errorCode = errorCode
        }
    }

    /// The name checked.
    public var host: String
    /// What LocalDNS answered.
    public var local: Side
    /// What HTTPDNS answered.
    public var httpdns: Side
    /// The comparison of the answers.
    public var verdict: Verdict
    /// Local addresses that are bogons.
    public var localBogons: [HTTPDNSIPAddress]
    /// A sentence for people.
    public var summary: String
    /// What connecting showed, when the check probed (``HTTPDNSHijackCheck/probePort``).
    public var probe: HTTPDNSHijackProbe?
    /// Whether a disagreement counts as hijacking: asked for, or implied by private answers being
    /// allowed (which removes the bogon test, leaving HTTPDNS's answer as the only reference).
    public var strict: Bool
    /// The conclusion: hijacked or blocked.
    public var isHijack: Bool

    private enum CodingKeys: String, CodingKey {
        case host, local, httpdns, verdict, localBogons, summary, probe, strict
        case isHijack = "hijack"
    }

    /// Compares the two sides, weighs the probe and decides.
    ///
    /// - Parameters:
    ///   - probe: TLS evidence for each side's first address, if the check connected.
    ///   - strict: count a disagreement as hijacking unless a probe clears it. Default false.
    package init(host: String, local: Side, httpdns: Side, probe: HTTPDNSHijackProbe? = nil, strict: Bool = false) {
        self.host = host
        self.local = local
        self.httpdns = httpdns
        self.probe = probe
        self.strict = strict
        let bogons = local.addresses.filter(\.isBogon)
        self.localBogons = bogons
        let trusted = Set(httpdns.addresses)
        if httpdns.addresses.isEmpty {
            verdict = .inconclusive
            summary = "HTTPDNS gave no answer for \(host); cannot compare"
        } else if local.addresses.isEmpty {
            verdict = .localMissing
            let reason = local.errorCode ?? "no address"
            summary = "LocalDNS gave nothing for \(host) (\(reason)) but HTTPDNS has \(httpdns.addresses.count) address(es): blocked"
        } else if local.addresses.contains(where: trusted.contains) {
            verdict = .agree
            summary = "LocalDNS and HTTPDNS agree for \(host)"
        } else if !bogons.isEmpty, !httpdns.addresses.allSatisfy(\.isBogon) {
            verdict = .bogonAnswer
            let list = bogons.map(\.description).joined(separator: ", ")
            summary = "LocalDNS answered \(host) with bogon address(es) \(list): hijacked"
        } else {
            verdict = .disagree
            summary = "LocalDNS and HTTPDNS share no address for \(host) (may be CDN steering, or hijacking)"
        }
        if verdict.isHijack || probe?.confirmsHijack == true {
            isHijack = true
        } else if verdict == .disagree, probe?.clearsLocal == true {
            isHijack = false
        } else {
            isHijack = strict && verdict == .disagree
        }
    }

    /// Both sides, the probe, the verdict and the conclusion, one fact a line (what `httpdns check`
    /// prints).
    public var description: String {
        func side(_ label: String, _ side: Side) -> String {
            var line = "  \(label) (\(side.source)): "
            if side.addresses.isEmpty {
                line += "no address"
                if let error = side.error { line += " — \(error)" }
            } else {
                line += side.addresses.map(\.description).joined(separator: ", ")
                if let ttl = side.ttl { line += "  ttl=\(ttl)" }
            }
            return line
        }
        var lines = [host + ":", side("LocalDNS", local), side("HTTPDNS ", httpdns)]
        if !localBogons.isEmpty {
            lines.append("  bogons from LocalDNS: " + localBogons.map(\.description).joined(separator: ", "))
        }
        if let probe {
            if let result = probe.local {
                lines.append("  probe LocalDNS \(result.address.uriText):\(probe.port): \(result.text)")
            }
            if let result = probe.httpdns {
                lines.append("  probe HTTPDNS  \(result.address.uriText):\(probe.port): \(result.text)")
            }
        }
        var conclusion = "  verdict: \(verdict.rawValue) — \(summary)"
        if probe?.confirmsHijack == true, !verdict.isHijack {
            conclusion += "; confirmed by connecting: LocalDNS's address cannot prove it is \(host)"
        } else if verdict == .disagree, probe?.clearsLocal == true {
            conclusion += "; LocalDNS's address presents a valid certificate for \(host): a different edge, not hijacking"
        } else if isHijack, !verdict.isHijack {
            conclusion += "; counted as hijacking because private answers are allowed or the check is strict"
        }
        lines.append(conclusion)
        lines.append(isHijack ? "  HIJACKED" : (verdict == .inconclusive ? "  INCONCLUSIVE" : "  OK"))
        return lines.joined(separator: "\n")
    }
}
