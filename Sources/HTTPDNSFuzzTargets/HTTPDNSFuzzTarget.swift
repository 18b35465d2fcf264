/// One fuzz target: a name (its corpus is `Fuzz/Corpus/<name>/`) and a property that must hold for
/// any input bytes.
///
/// The same properties run in two places: `make fuzz` links them into libFuzzer binaries
/// (`Fuzz/Harness`, which traps on a failure so that libFuzzer keeps the input), and the test target
/// `HTTPDNSFuzzTargetsTests` replays every checked-in corpus under `make test`. A property never
/// traps itself: it throws ``HTTPDNSFuzzFailure`` so that a test can report which input broke it.
package struct HTTPDNSFuzzTarget: Sendable {
    /// The target's name, also its corpus folder and binary suffix (`httpdns-fuzz-<name>`).
    package let name: String
    /// What the target feeds and what it asserts, for `make fuzz` listings.
    package let summary: String
    private let property: @Sendable ([UInt8]) throws(HTTPDNSFuzzFailure) -> Void

    init(_ name: String, _ summary: String, _ property: @escaping @Sendable ([UInt8]) throws(HTTPDNSFuzzFailure) -> Void) {
        self.name = name
        self.summary = summary
        self.property = property
    }

    /// Runs the property over one input.
    /// - Throws: ``HTTPDNSFuzzFailure`` when the property does not hold.
    package func run(_ input: [UInt8]) throws(HTTPDNSFuzzFailure) {
        try property(input)
    }

    /// Every target, one per parser and hostile boundary.
    package static let all: [HTTPDNSFuzzTarget] = [
        dnsCodec, dnsName, dnspod, alibaba, dohWire, dohJSON, ipList, json, urlQuery, ipAddress, hostPattern,
        cacheControl, zoneFile, cacheFile, proxyProtocol, forwardedFor, serverQuery, serverDoH, proxyRequestHead, reportBody,
        cidrList, ticketKeys, tsigKey, zoneTransfer, zoneCopy, stubFront, stubCache, serverDoT, serverDoQ, clientDoQ,
    ]

    /// The target called `name`, if any.
    package static func named(_ name: String) -> HTTPDNSFuzzTarget? {
        all.first { $0.name == name }
    }
}

/// A property that did not hold, with what was seen.
package struct HTTPDNSFuzzFailure: Error, CustomStringConvertible {
    package var detail: String

    package var description: String { "property failed: \(detail)" }
}

/// Fails the property with `detail` unless `condition` holds.
@inline(__always)
func require(_ condition: Bool, _ detail: @autoclosure () -> String) throws(HTTPDNSFuzzFailure) {
    if !condition { throw HTTPDNSFuzzFailure(detail: detail()) }
}

/// Reads a fuzz input as a few choices followed by the rest of the bytes.
struct FuzzInput {
    private(set) var bytes: ArraySlice<UInt8>

    init(_ bytes: [UInt8]) {
        self.bytes = bytes[...]
    }

    /// The next byte as a choice among `count` (0 when the input is used up).
    mutating func choice(_ count: Int) -> Int {
        guard let first = bytes.first else { return 0 }
        bytes = bytes.dropFirst()
        return Int(first) % max(count, 1)
    }

    /// Everything not taken yet.
    var rest: [UInt8] { Array(bytes) }

    /// Everything not taken yet, as text (invalid UTF-8 repaired, as a String from the network would be).
    var text: String { String(decoding: bytes, as: UTF8.self) }
}
