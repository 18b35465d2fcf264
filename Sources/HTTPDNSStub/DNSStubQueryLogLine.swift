import DNSStubCore
import DNSWire
import HTTPDNSCore
import HTTPDNSOperations

/// One stub query as `--query-log` records it: a single-line JSON object, ASCII only, every member
/// always present and in this order (`null` when unknown), escaped as the access log's lines are
/// (``HTTPDNSAccessLogLine``: a hostile name cannot break the line or send terminal escapes).
///
/// `{"time":"2026-12-04T02:30:00.123456Z","client":"127.0.0.1","transport":"udp","name":"www.example.com",
/// "type":"A","rcode":"NOERROR","source":"upstream","upstream":"doh=https://…","ms":1.234}`
package struct DNSStubQueryLogLine: Sendable, Hashable {
    /// When the query arrived: microseconds since the Unix epoch (written as RFC 3339 UTC).
    package var timeMicroseconds: Int64
    package var client: HTTPDNSIPAddress?
    package var transport: DNSStubTransport
    /// The name as asked (case kept).
    package var name: String
    package var type: DNSRecordType
    package var rcode: DNSResponseCode
    package var source: DNSStubMetrics.Source
    /// The upstream that answered, when one did.
    package var upstream: String?
    /// From the query's arrival to its answer, in microseconds.
    package var latencyMicroseconds: Int

    /// Appends the line's JSON and a newline to `out`.
    package func append(to out: inout [UInt8]) {
        func raw(_ text: StaticString) {
            text.withUTF8Buffer { out.append(contentsOf: $0) }
        }
        func string(_ value: String?, maxScalars: Int = .max) {
            if let value { HTTPDNSLogText.appendString(value, to: &out, maxScalars: maxScalars) } else { raw("null") }
        }
        raw("{\"time\":\"")
        HTTPDNSLogText.appendRFC3339(microseconds: timeMicroseconds, to: &out)
        raw("\",\"client\":")
        string(client?.description)
        raw(",\"transport\":")
        string(transport == .udp ? "udp" : "tcp")
        raw(",\"name\":")
        string(name, maxScalars: HTTPDNSLogText.maxNameScalars)
        raw(",\"type\":")
        string("\(type)", maxScalars: 32)
        raw(",\"rcode\":")
        string(rcode.description)
        raw(",\"source\":")
        string(source.rawValue)
        raw(",\"upstream\":")
        string(upstream, maxScalars: 512)
        raw(",\"ms\":")
        let micros = max(0, latencyMicroseconds)
        let fraction = String(micros % 1000)
        out.append(contentsOf: "\(micros / 1000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction)".utf8)
        raw("}\n")
    }
}
