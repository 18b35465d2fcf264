/// The evidence from one hijack check and its one conclusion: what LocalDNS said, what HTTPDNS said,
/// what connecting to their addresses showed, the verdict on the answers, and whether that counts as
/// hijacking (``isHijack``) and why (``reason``).
///
/// ``verdict`` compares the answers alone and concludes nothing by itself: answers that share no
/// address (``Verdict/disagree``) are a CDN's steering or a forgery, and only the probe or the
/// check's settings tell which. ``reason`` is the conclusion, the same for `httpdns check` and for
/// an app; ``isHijack`` is derived from it.
public struct HTTPDNSHijackReport: Sendable, Hashable, CustomStringConvertible {
    /// What the answers show when compared.
    public enum Verdict: String, Sendable, Hashable, Codable {
        /// Both sides share at least one address.
        case agree
        /// The answers share no address, but LocalDNS gave public addresses (CDNs do this too).
        case disagree
        /// LocalDNS answered with bogon addresses while HTTPDNS gave public ones.
        case bogonAnswer
        /// LocalDNS says the name does not exist (or gave nothing) while HTTPDNS has addresses.
        case localMissing
        /// HTTPDNS could not answer; nothing can be concluded.
        case inconclusive
    }

    /// Why a report counts as hijacking (or blocking).
    public enum Reason: String, Sendable, Hashable, Codable {
        /// The verdict is ``Verdict/bogonAnswer``.
        case bogonAnswer
        /// The verdict is ``Verdict/localMissing``: the name is blocked.
        case localMissing
        /// Connecting confirmed it: LocalDNS's address cannot present a certificate that verifies for
        /// the name while HTTPDNS's can (``HTTPDNSHijackProbe/confirmsHijack``).
        case confirmedByProbe
        /// The answers share no address and the check was asked to count that (strict), and no probe
        /// cleared LocalDNS's address.
        case strictDisagreement
        /// The answers share no address while private answers are allowed, and no probe cleared
        /// LocalDNS's address: allowing them removes the bogon test, so HTTPDNS's answer is the only
        /// reference left.
        case privateAnswersAllowed

        /// The reasoning in words for people (what `httpdns check` prints after the verdict).
        public var explanation: String {
            switch self {
            case .bogonAnswer:
                "LocalDNS answered with bogon addresses where HTTPDNS gave public ones"
            case .localMissing:
                "LocalDNS gave nothing where HTTPDNS has addresses: the name is blocked"
            case .confirmedByProbe:
                "confirmed by connecting: LocalDNS's address cannot prove it is the host, HTTPDNS's can"
            case .strictDisagreement:
                "counted as hijacking because the check is strict: an answer that shares no address with HTTPDNS's counts"
            case .privateAnswersAllowed:
                "counted as hijacking because private answers are allowed: that removes the bogon test, so HTTPDNS's "
                    + "answer is the only reference left, and a LocalDNS answer that shares no address with it is "
                    + "treated as forged (a probe can clear a valid edge)"
            }
        }
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
    public let host: String
    /// What LocalDNS answered.
    public let local: Side
    /// What HTTPDNS answered.
    public let httpdns: Side
    /// The comparison of the answers.
    public let verdict: Verdict
    /// Local addresses that are bogons.
    public let localBogons: [HTTPDNSIPAddress]
    /// The verdict in a sentence for people.
    public let summary: String
    /// What connecting showed, when the check probed.
    public let probe: HTTPDNSHijackProbe?
    /// Whether the check was asked to count any disagreement as hijacking; false unless it was.
    public let strict: Bool
    /// Why the report counts as hijacking or blocking; nil when it does not.
    public let reason: Reason?

    /// The conclusion: hijacked or blocked, for the ``reason`` given.
    public var isHijack: Bool { reason != nil }

    /// Compares the two sides, weighs the probe and decides.
    ///
    /// - Parameters:
    ///   - probe: TLS evidence for each side's first address, if the check connected.
    ///   - strict: count a disagreement as hijacking unless a probe clears it. Default false.
    ///   - privateAnswersAllowed: private and loopback answers are legitimate here (the answer
    ///     hygiene's `allowPrivate`), so a bogon answer proves nothing and a disagreement that no
    ///     probe clears counts as hijacking. Default false.
    package init(
        host: String, local: Side, httpdns: Side, probe: HTTPDNSHijackProbe? = nil, strict: Bool = false,
        privateAnswersAllowed: Bool = false
    ) {
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
        reason = Self.reason(verdict: verdict, probe: probe, strict: strict, privateAnswersAllowed: privateAnswersAllowed)
    }

    /// The one rule: the verdict's own cases first, then a probe's confirmation; a disagreement
    /// whose LocalDNS address a probe verified is a different edge, whatever the settings.
    private static func reason(verdict: Verdict, probe: HTTPDNSHijackProbe?, strict: Bool, privateAnswersAllowed: Bool) -> Reason? {
        switch verdict {
        case .bogonAnswer: return .bogonAnswer
        case .localMissing: return .localMissing
        case .inconclusive: return nil
        case .agree, .disagree: break
        }
        if probe?.confirmsHijack == true { return .confirmedByProbe }
        guard verdict == .disagree, probe?.clearsLocal != true else { return nil }
        if strict { return .strictDisagreement }
        return privateAnswersAllowed ? .privateAnswersAllowed : nil
    }

    /// Both sides, the probe, the verdict and the conclusion with its reason, one fact a line (what
    /// `httpdns check` prints).
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
        switch reason {
        case .bogonAnswer, .localMissing:
            break  // the summary says it
        case let reason?:
            conclusion += "; " + reason.explanation
        case nil where verdict == .disagree && probe?.clearsLocal == true:
            conclusion += "; LocalDNS's address presents a valid certificate for \(host): a different edge, not hijacking"
        case nil:
            break
        }
        lines.append(conclusion)
        lines.append(isHijack ? "  HIJACKED" : (verdict == .inconclusive ? "  INCONCLUSIVE" : "  OK"))
        return lines.joined(separator: "\n")
    }
}

extension HTTPDNSHijackReport: Codable {
    private enum CodingKeys: String, CodingKey {
        case host, local, httpdns, verdict, localBogons, summary, probe, strict, reason
        case isHijack = "hijack"
    }

    /// Reads a report; `"hijack"` must agree with `"reason"` (a report has one conclusion).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        host = try container.decode(String.self, forKey: .host)
        local = try container.decode(Side.self, forKey: .local)
        httpdns = try container.decode(Side.self, forKey: .httpdns)
        verdict = try container.decode(Verdict.self, forKey: .verdict)
        localBogons = try container.decode([HTTPDNSIPAddress].self, forKey: .localBogons)
        summary = try container.decode(String.self, forKey: .summary)
        probe = try container.decodeIfPresent(HTTPDNSHijackProbe.self, forKey: .probe)
        strict = try container.decodeIfPresent(Bool.self, forKey: .strict) ?? false
        reason = try container.decodeIfPresent(Reason.self, forKey: .reason)
        if let hijack = try container.decodeIfPresent(Bool.self, forKey: .isHijack), hijack != isHijack {
            throw DecodingError.dataCorruptedError(
                forKey: .isHijack, in: container, debugDescription: "\"hijack\" disagrees with \"reason\"")
        }
    }

    /// Writes the report with `"hijack"`, the conclusion, beside `"reason"` (absent when not hijacked).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(host, forKey: .host)
        try container.encode(local, forKey: .local)
        try container.encode(httpdns, forKey: .httpdns)
        try container.encode(verdict, forKey: .verdict)
        try container.encode(localBogons, forKey: .localBogons)
        try container.encode(summary, forKey: .summary)
        try container.encodeIfPresent(probe, forKey: .probe)
        try container.encode(strict, forKey: .strict)
        try container.encodeIfPresent(reason, forKey: .reason)
        try container.encode(isHijack, forKey: .isHijack)
    }
}
