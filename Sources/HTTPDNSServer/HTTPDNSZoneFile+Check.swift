import HTTPDNSCore

extension HTTPDNSZoneFile {
    /// Reads an entry's `"check"` object (members case-insensitive, each at most once, unknown ones
    /// refused like the entry's own); ranges are checked by ``HTTPDNSHealthCheck/validate()``.
    ///
    /// - Throws: ``HTTPDNSServiceError`` `.invalidZone` at the name's position: a wrong type, an
    ///   unknown or repeated member, a missing or unknown `type`, a value out of range.
    func check(_ value: HTTPDNSJSON, name: String, offset: Int) throws(HTTPDNSServiceError) -> HTTPDNSHealthCheck {
        let shown = HTTPDNSZone.shown(name)
        func fail(_ detail: String) -> HTTPDNSServiceError { failure(at: offset, "\(shown): check: \(detail)") }
        guard case .object(let members) = value else { throw fail("wrong type (check is an object)") }
        var values: [String: HTTPDNSJSON] = [:]
        for member in members.members {
            let key = member.key.lowercased()
            guard Self.checkMembers.contains(key) else {
                throw fail("unknown member \(HTTPDNSZone.shown(member.key)) (expected \(Self.checkMembers.sorted().joined(separator: ", ")))")
            }
            guard values.updateValue(member.value, forKey: key) == nil else {
                throw fail("member \(HTTPDNSZone.shown(member.key)) listed twice (members are case-insensitive)")
            }
        }
        guard let typeText = values["type"]?.stringValue else { throw fail("type is required: tcp, tls, http or https") }
        guard let kind = HTTPDNSHealthCheck.Kind(rawValue: typeText.lowercased()) else {
            throw fail("unknown type \(HTTPDNSZone.shown(typeText)) (expected tcp, tls, http or https)")
        }
        // By presence, not value: `"path": "/"` on a tcp check is as wrong as `"/health"` (issue 32).
        if !kind.sendsRequest, let member = ["path", "expect"].first(where: { values[$0] != nil }) {
            throw fail("\(member) belongs to http and https checks, not \(kind.rawValue)")
        }
        var check = HTTPDNSHealthCheck(kind)
        if let port = values["port"] {
            guard let number = port.intValue, (1...65_535).contains(number) else { throw fail("port must be an integer 1...65535") }
            check.port = number
        }
        if let path = values["path"] {
            guard let text = path.stringValue else { throw fail("wrong type (path is a string)") }
            check.path = text
        }
        if let expect = values["expect"] {
            guard let text = expect.stringValue, let digit = Self.statusClass(text) else {
                throw fail("expect must be \"2xx\", \"3xx\", \"4xx\" or \"5xx\"")
            }
            check.expect = digit
        }
        if let interval = values["interval"] {
            check.interval = try seconds(interval, "interval", HTTPDNSHealthCheck.intervalRange, fail)
        }
        if let timeout = values["timeout"] {
            check.timeout = try seconds(timeout, "timeout", HTTPDNSHealthCheck.timeoutRange, fail)
        }
        if let rise = values["rise"] {
            guard let count = rise.intValue, HTTPDNSHealthCheck.countRange.contains(count) else { throw fail("rise must be an integer 1...100") }
            check.rise = count
        }
        if let fall = values["fall"] {
            guard let count = fall.intValue, HTTPDNSHealthCheck.countRange.contains(count) else { throw fail("fall must be an integer 1...100") }
            check.fall = count
        }
        if let jitter = values["jitter"] {
            guard let fraction = Self.number(jitter), HTTPDNSHealthCheck.jitterRange.contains(fraction) else {
                throw fail("jitter must be a number 0...0.5")
            }
            check.jitter = fraction
        }
        do {
            try check.validate()
        } catch {
            throw failure(at: offset, "\(shown): \(error.detail)")
        }
        return check
    }

    static let checkMembers: Set<String> = ["type", "port", "path", "expect", "interval", "timeout", "rise", "fall", "jitter"]

    /// `2xx` … `5xx` (any case of `x`) as its digit.
    static func statusClass(_ text: String) -> Int? {
        let bytes = Array(text.utf8)
        guard bytes.count == 3, (UInt8(ascii: "2")...UInt8(ascii: "5")).contains(bytes[0]),
            bytes[1] | 0x20 == UInt8(ascii: "x"), bytes[2] | 0x20 == UInt8(ascii: "x")
        else { return nil }
        return Int(bytes[0] - UInt8(ascii: "0"))
    }

    /// A finite JSON number (short text only: a thousand-digit number is not a duration).
    static func number(_ value: HTTPDNSJSON) -> Double? {
        guard case .number(let text) = value, text.utf8.count <= 24, let number = Double(text), number.isFinite else { return nil }
        return number
    }

    private func seconds(
        _ value: HTTPDNSJSON, _ what: String, _ range: ClosedRange<Duration>, _ fail: (String) -> HTTPDNSServiceError
    ) throws(HTTPDNSServiceError) -> Duration {
        let bounds = "\(what) must be a number of seconds \(Self.secondsText(range.lowerBound))...\(Self.secondsText(range.upperBound))"
        guard let seconds = Self.number(value), seconds >= 0, seconds <= 86_400 else { throw fail(bounds) }
        let duration = Duration.milliseconds(Int64((seconds * 1000).rounded()))
        guard range.contains(duration) else { throw fail(bounds) }
        return duration
    }

    static func secondsText(_ duration: Duration) -> String {
        let milliseconds = duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
        return milliseconds % 1000 == 0 ? "\(milliseconds / 1000)" : "\(Double(milliseconds) / 1000)"
    }
}
