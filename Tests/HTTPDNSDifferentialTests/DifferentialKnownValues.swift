import Foundation
import HTTPDNSDifferential
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What plain `URLSession` (route (a), corelibs on Debian's libcurl) gives in each scenario,
/// written out from what the bed serves: the origin's bodies (``DifferentialOrigin``), nginx's own
/// pages, the payloads' hashes. Route (a) is checked against these before any route is compared
/// with it, so that both routes going wrong alike fails the suite.
///
/// Where corelibs itself does something a browser would not, the value here is corelibs' (each
/// says so); a toolchain that changes it fails here first, and the corelibs-limits table of
/// `ProtectingURLSession.md` with it.
struct DifferentialKnownValues {
    let bed: DifferentialBed
    /// `nginx/1.22.1`: nginx writes it into its own pages (the redirects' bodies).
    let nginxVersion: String

    /// The expected result of `scenario` through plain `URLSession`, or nil for a scenario this
    /// table does not know (a failure: every scenario has its row).
    func result(_ scenario: String) -> DifferentialResult? {
        var result = DifferentialResult()
        switch scenario {
        case "get":
            result.exchanges = [echo("get", "GET"), bytes("get-async", 300_000)]
        case "head":
            result.exchanges = [exchange("head", body: Data(), headers: text)]
        case "post-httpBody":
            result.exchanges = [echo("post", "POST", body: DifferentialPayload.bytes(100_000))]
        case "gzip":
            let line = "the quick brown fox jumps over the lazy dog 0123456789\n"
            result.exchanges = [
                exchange("gzip", body: Data(String(repeating: line, count: 4000).utf8), headers: text.merging(["content-encoding": "gzip"]) { $1 }),
            ]
        case "http2":
            result.exchanges = [exchange("proto", body: Data("HTTP/2.0\n".utf8), headers: text.merging(["x-protocol": "HTTP/2.0"]) { $1 })]
        case "concurrent-200":
            let body = echoBody("GET", length: 0, sha256: DifferentialHash.sha256(Data()))
            for round in ["cold", "warm"] {
                result.facts.merge([
                    "\(round).ok": "200", "\(round).bodies": DifferentialHash.sha256(body),
                    "\(round).failed": "0", "\(round).failures": "",
                ]) { $1 }
            }
        case "delegate-chunks":
            result.exchanges = [exchange("drip", body: Data(repeating: 0x64, count: 16 << 10), headers: text)]
            result.facts = ["drip.chunksMoreThanOne": "1", "drip.responses": "200"]
        case "cancel-mid-download":
            var cancelled = DifferentialResult.Exchange(label: "endless")
            cancelled.status = 200
            cancelled.headers = text
            cancelled.error = URLError.Code.cancelled.rawValue
            result.exchanges = [cancelled]
            result.facts = ["endless.responses": "200"]
        case "upload-stream":
            result.exchanges = [echo("stream-64MiB", "POST", file: 64 << 20)]
        case "upload-file-64MiB":
            result.exchanges = [echo("file-64MiB", "PUT", file: 64 << 20)]
        case "upload-apis":
            let payload = DifferentialPayload.bytes(200_000)
            result.exchanges = [
                echo("upload(for:from:)", "POST", body: payload), echo("upload(for:fromFile:)", "POST", file: 300_000),
                echo("uploadTask(with:from:)", "POST", body: payload),
            ]
        case "upload-progress":
            result.exchanges = [echo("upload", "POST", body: DifferentialPayload.bytes(1 << 20))]
            result.facts = [
                "upload.chunksMoreThanOne": "0", "upload.responses": "200", "upload.sentBodyData": "1",
                "upload.totalBytesExpectedToSend": String(1 << 20), "upload.totalBytesSent": String(1 << 20),
            ]
        case "download-apis":
            result.exchanges = ["download(from:)", "downloadTask(with:completionHandler:)", "downloadTask+delegate"].map { bytes($0, 1_000_000) }
            result.facts = ["downloadTask+delegate.finishedDownloading": "1", "downloadTask+delegate.wroteData": "1"]
        case "authorization-cross-host-redirect":
            // Corelibs sends `Authorization` on to the other host (the corelibs-limits row: curl and
            // browsers drop it).
            result.exchanges = [
                echo("cross", "GET", host: bed.otherHost, authorization: "Bearer secret"),
                echo("same-host", "GET", authorization: "Bearer secret"),
            ]
        case "cookies-two-sessions":
            result.exchanges = [
                echo("a-login", "GET", path: "/cookie", plain: true), echo("b-echo", "GET", plain: true),
                echo("a-echo", "GET", cookie: "id=alpha", plain: true),
            ]
            result.facts = ["a.jar": "id=alpha", "b.jar": ""]
        case "cookies-http2":
            // Corelibs stores no cookie from an HTTP/2 answer (it looks for `Set-Cookie`
            // case-sensitively; HTTP/2 names are lower case): A's jar stays empty.
            result.exchanges = [echo("a-login", "GET", path: "/cookie"), echo("b-echo", "GET"), echo("a-echo", "GET")]
            result.facts = ["a.jar": "", "b.jar": ""]
        case "challenge-401":
            // Corelibs hands the delegate the 401 (its body too) and then the retried answer: the
            // body is both bodies, in two chunks.
            result.exchanges = [exchange("answered", body: Data("who are you?\nwelcome\n".utf8), headers: text)]
            result.facts = ["answered.challenges": "1", "answered.chunksMoreThanOne": "1", "answered.responses": "401, 200"]
        case "urlcache-hit":
            // Corelibs' `URLCache` serves no hit here (`ProtectingURLSession.md`, row `URLCache`): the origin counts two.
            let cached = text.merging(["cache-control": "max-age=600"]) { $1 }
            result.exchanges = (0..<2).map { round in
                exchange("round-\(round)", body: Data("cached body\n".utf8), headers: cached.merging(["x-hits": String(round + 1)]) { $1 })
            }
        case "timeout-request":
            result.exchanges = ["configuration", "request"].map { failed($0, .timedOut) }
        case "timeout-resource":
            // Corelibs ignores `timeoutIntervalForResource` (`ProtectingURLSession.md`): the 2 s drip arrives whole.
            result.exchanges = [exchange("resource", body: Data(repeating: 0x64, count: 20 << 10), headers: text)]
        default:
            guard let redirect = Self.redirect(scenario) else { return nil }
            result.exchanges = [redirect.follow ? redirected(redirect.code) : nginxRedirect(redirect.code)]
            result.facts = ["redirect.chunksMoreThanOne": "0", "redirect.redirectsAsked": "1", "redirect.responses": redirect.follow ? "200" : String(redirect.code)]
        }
        return result
    }

    /// `redirect-307-follow` → (307, true).
    static func redirect(_ scenario: String) -> (code: Int, follow: Bool)? {
        let parts = scenario.split(separator: "-")
        guard parts.count == 3, parts[0] == "redirect", let code = Int(parts[1]) else { return nil }
        return (code, parts[2] == "follow")
    }

    /// A followed redirect of the scenarios' POST (1,000 bytes). Corelibs turns 301, 302 and 303
    /// into a GET; on 307 and 308 it keeps POST but sends an empty body (`ProtectingURLSession.md`,
    /// row "307/308 resend the body").
    func redirected(_ code: Int) -> DifferentialResult.Exchange {
        echo("redirect", [307, 308].contains(code) ? "POST" : "GET")
    }

    /// nginx's own page for a redirect it answers (`return 30x URL`), as nginx writes it
    /// (`ngx_http_special_response.c`: the status line as title and heading, its version below).
    func nginxRedirect(_ code: Int) -> DifferentialResult.Exchange {
        let reason = [301: "Moved Permanently", 302: "Found", 303: "See Other", 307: "Temporary Redirect", 308: "Permanent Redirect"][code] ?? ""
        let page = "<html>\r\n<head><title>\(code) \(reason)</title></head>\r\n<body>\r\n<center><h1>\(code) \(reason)</h1></center>\r\n"
            + "<hr><center>\(nginxVersion)</center>\r\n</body>\r\n</html>\r\n"
        var exchange = exchange("redirect", body: Data(page.utf8), headers: ["content-type": "text/html", "location": bed.url("/echo").absoluteString])
        exchange.status = code
        return exchange
    }

    // MARK: Building blocks

    let text = ["content-type": "text/plain"]

    func exchange(_ label: String, body: Data, headers: [String: String]) -> DifferentialResult.Exchange {
        var exchange = DifferentialResult.Exchange(label: label)
        exchange.status = 200
        exchange.headers = headers
        exchange.bodyLength = body.count
        exchange.bodySHA256 = DifferentialHash.sha256(body)
        return exchange
    }

    func failed(_ label: String, _ code: URLError.Code) -> DifferentialResult.Exchange {
        var exchange = DifferentialResult.Exchange(label: label)
        exchange.error = code.rawValue
        return exchange
    }

    /// `/bytes?n=N`: N bytes `i * 7`.
    func bytes(_ label: String, _ count: Int) -> DifferentialResult.Exchange {
        exchange(label, body: Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7) }), headers: text)
    }

    /// The origin's one-line echo body: `METHOD PATH LENGTH SHA256\n`.
    func echoBody(_ method: String, path: String = "/echo", length: Int, sha256: String) -> Data {
        Data("\(method) \(path) \(length) \(sha256)\n".utf8)
    }

    /// An echo of a request with `body` (or the bed's payload file of `file` bytes), as the
    /// origin answers it: what it saw, in headers and in the body; `plain` for nginx's HTTP port.
    func echo(
        _ label: String, _ method: String, path: String = "/echo", body: Data = Data(), file: Int? = nil,
        host: String? = nil, cookie: String = "-", authorization: String = "-", plain: Bool = false
    ) -> DifferentialResult.Exchange {
        var length = body.count
        var sha256 = DifferentialHash.sha256(body)
        if let file, let hashed = try? DifferentialHash.file(DifferentialPayload.file(file, in: bed.scratch)) {
            (sha256, length) = hashed
        }
        return exchange(label, body: echoBody(method, path: path, length: length, sha256: sha256), headers: [
            "content-type": "text/plain", "x-method": method, "x-host": "\(host ?? bed.host):\(plain ? bed.httpPort : bed.httpsPort)",
            "x-body-length": String(length), "x-body-sha256": sha256, "x-cookie": cookie, "x-authorization": authorization,
        ])
    }
}
