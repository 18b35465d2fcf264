import DNSWire
import HTTPDNSCore
import HTTPDNSOperations

/// One query as the access log records it: a single-line JSON object.
///
/// `{"time":"2026-12-01T05:49:20.123456Z","client":"192.0.2.7","protocol":"h2","endpoint":"doh-post",
/// "name":"www.example.test","type":"A","status":200,"rcode":"NOERROR","answers":2,"cache":"hit","latency_us":412,
/// "view":"default"}`
///
/// Members are always present and in this order (`null` when unknown), so that `jq` and log
/// shippers see one schema. The output is ASCII only: every byte the client chose (the name, the
/// type) is escaped as JSON requires, and beyond that every control character, DEL and non-ASCII
/// scalar becomes `\uXXXX`, so that a hostile name can neither break the line nor send terminal
/// escapes to whoever reads the log. A name longer than ``maxNameScalars`` is cut there.
package struct HTTPDNSAccessLogLine: Sendable, Hashable {
    /// The protocol the request came over: an HTTP version, `dot` for DNS over TLS, or `doq` for
    /// DNS over QUIC.
    package enum HTTPProtocol: String, Sendable, Hashable {
        case h1, h2, dot, doq
    }

    /// Longest name written, in Unicode scalars (``HTTPDNSLogText/maxNameScalars``).
    package static var maxNameScalars: Int { HTTPDNSLogText.maxNameScalars }

    /// When the request arrived: microseconds since the Unix epoch (written as RFC 3339 UTC).
    package var timeMicroseconds: Int64
    /// The client's address (after PROXY protocol / `X-Forwarded-For` from a trusted proxy).
    package var client: HTTPDNSIPAddress?
    package var httpProtocol: HTTPProtocol
    package var endpoint: HTTPDNSServerMetrics.Endpoint
    /// The name asked, as the client sent it (several, comma-separated, for a batch).
    package var name: String?
    /// The type asked (`A`, `AAAA`, `TYPE65`, …).
    package var type: String?
    /// The HTTP status sent.
    package var status: Int
    /// The DNS response code, when the answer carries one.
    package var rcode: DNSResponseCode?
    /// Addresses (or records) in the answer.
    package var answers: Int
    package var cache: HTTPDNSServerMetrics.CacheOutcome?
    /// From request head to response, in microseconds.
    package var latencyMicroseconds: Int
    /// The view of the client (``HTTPDNSViews``), when a handler picked one.
    package var view: String? = nil

    package init(
        timeMicroseconds: Int64, client: HTTPDNSIPAddress?, httpProtocol: HTTPProtocol, endpoint: HTTPDNSServerMetrics.Endpoint,
        name: String?, type: String?, status: Int, rcode: DNSResponseCode? = nil, answers: Int = 0,
        cache: HTTPDNSServerMetrics.CacheOutcome? = nil, latencyMicroseconds: Int, view: String? = nil
    ) {
        self.view = view
        self.timeMicroseconds = timeMicroseconds
        self.client = client
        self.httpProtocol = httpProtocol
        self.endpoint = endpoint
        self.name = name
        self.type = type
        self.status = status
        self.rcode = rcode
        self.answers = answers
        self.cache = cache
        self.latencyMicroseconds = latencyMicroseconds
    }

    /// The line's JSON text, with its final newline.
    package var text: String {
        var bytes: [UInt8] = []
        append(to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends the line's JSON and a newline to `out` (no intermediate strings).
    package func append(to out: inout [UInt8]) {
        func raw(_ text: StaticString) {
            text.withUTF8Buffer { out.append(contentsOf: $0) }
        }
        func number(_ value: some BinaryInteger) {
            out.append(contentsOf: String(value).utf8)
        }
        raw("{\"time\":\"")
        HTTPDNSLogText.appendRFC3339(microseconds: timeMicroseconds, to: &out)
        raw("\",\"client\":")
        if let client { HTTPDNSLogText.appendString(client.description, to: &out) } else { raw("null") }
        raw(",\"protocol\":")
        HTTPDNSLogText.appendString(httpProtocol.rawValue, to: &out)
        raw(",\"endpoint\":")
        HTTPDNSLogText.appendString(endpoint.label, to: &out)
        raw(",\"name\":")
        if let name { HTTPDNSLogText.appendString(name, to: &out, maxScalars: HTTPDNSLogText.maxNameScalars) } else { raw("null") }
        raw(",\"type\":")
        if let type { HTTPDNSLogText.appendString(type, to: &out, maxScalars: 32) } else { raw("null") }
        raw(",\"status\":")
        number(status)
        raw(",\"rcode\":")
        if let rcode { HTTPDNSLogText.appendString(rcode.description, to: &out) } else { raw("null") }
        raw(",\"answers\":")
        number(answers)
        raw(",\"cache\":")
        if let cache { HTTPDNSLogText.appendString(cache.label, to: &out) } else { raw("null") }
        raw(",\"latency_us\":")
        number(latencyMicroseconds)
        raw(",\"view\":")
        if let view { HTTPDNSLogText.appendString(view, to: &out, maxScalars: 64) } else { raw("null") }
        raw("}\n")
    }
}
