import DNSWire
import Foundation
import HTTPServing
import XCTest
import HTTPDNSCore

/// A loopback HTTP server that answers like an HTTPDNS service, with scripted misbehaviour, and
/// counts the requests it gets (for coalescing assertions).
final class ProviderServer: Sendable {
    enum Mode: Sendable {
        case normal
        case status(Int)
        case garbage
        case contentType(String)
        case oversized
        case delay(Double)
    }

    private final class Log: Sendable {
        let state = HTTPDNSLock<(requests: [HTTPServer.Request], mode: Mode)>(([], .normal))
    }

    let server: HTTPServer
    private let log = Log()

    /// Starts on 127.0.0.1:0; `respond` builds the normal answer for a request.
    init(respond: @escaping @Sendable (HTTPServer.Request) -> HTTPServer.Response) throws {
        let log = self.log
        var configuration = HTTPServer.Configuration()
        // Loopback, stopped at teardown: no need to wait the drain's 1 s quiet period.
        configuration.limits.drainQuietPeriod = .milliseconds(50)
        server = try HTTPServer(configuration: configuration) { request in
            let mode = log.state.withLock { state -> Mode in
                state.requests.append(request)
                return state.mode
            }
            switch mode {
            case .normal:
                return respond(request)
            case .status(let code):
                return .text("error", status: code)
            case .garbage:
                return HTTPServer.Response(
                    headers: [.init(name: "Content-Type", value: "application/dns-message")],
                    body: Data((0..<200).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }))
            case .contentType(let type):
                var response = respond(request)
                response.headers = [.init(name: "Content-Type", value: type)]
                return response
            case .oversized:
                return HTTPServer.Response(
                    headers: [.init(name: "Content-Type", value: "application/json")],
                    body: Data(repeating: UInt8(ascii: " "), count: 70 * 1024))
            case .delay(let seconds):
                Thread.sleep(forTimeInterval: seconds)
                return respond(request)
            }
        }
    }

    var base: String { "http://127.0.0.1:\(server.port)" }
    var requests: [HTTPServer.Request] { log.state.withLock { $0.requests } }
    var requestCount: Int { log.state.withLock { $0.requests.count } }

    func set(_ mode: Mode) {
        log.state.withLock { $0.mode = mode }
    }

    func stop() { server.stop() }

    static func json(_ text: String) -> HTTPServer.Response {
        HTTPServer.Response(headers: [.init(name: "Content-Type", value: "application/json")], body: Data(text.utf8))
    }

    /// A DoH wire answer to the query in `request` (GET ?dns= or POST body) with the given records.
    static func dohAnswer(_ request: HTTPServer.Request, a: [[UInt8]], aaaa: [[UInt8]], cname: String? = nil, ttl: UInt32 = 300) -> HTTPServer.Response {
        let wire: [UInt8]
        if request.method == "POST" {
            wire = [UInt8](request.body)
        } else {
            var text = request.queryValue("dns") ?? ""
            text = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            while text.count % 4 != 0 { text += "=" }
            wire = [UInt8](Data(base64Encoded: text) ?? Data())
        }
        guard let query = try? DNSMessage(decoding: wire), let question = query.questions.first else {
            return .text("bad query", status: 400)
        }
        var response = DNSMessage.response(to: query)
        var owner = question.name
        if let cname, let target = try? DNSName(cname) {
            response.answers.append(DNSRecord(name: owner, ttl: ttl, data: .cname(target)))
            owner = target
        }
        if question.type == .A {
            for bytes in a { response.answers.append(DNSRecord(name: owner, ttl: ttl, data: .a(bytes))) }
        }
        if question.type == .AAAA {
            for bytes in aaaa { response.answers.append(DNSRecord(name: owner, ttl: ttl, data: .aaaa(bytes))) }
        }
        let body = (try? response.encode()) ?? []
        return HTTPServer.Response(
            headers: [.init(name: "Content-Type", value: "application/dns-message")], body: Data(body))
    }
}
