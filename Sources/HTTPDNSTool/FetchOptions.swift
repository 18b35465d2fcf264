import Foundation
@_spi(HTTPDNSPackage) import HTTPDNSCore
import HTTPDNSTransport

/// What `httpdns fetch` was asked to do, in curl's terms, validated before any traffic.
struct FetchOptions: Sendable {
    /// The request body.
    enum Body: Sendable {
        /// Bytes given on the command line (`-d`, `--data-binary TEXT`, or `-d @FILE` read whole).
        case data(Data)
        /// `--data-binary @FILE`: streamed from the file as it is sent.
        case file(String)
    }

    static let specs: [OptionSpec] = [
        OptionSpec("request", short: "X", value: "method", help: "The request method. Default GET, or POST with a body."),
        OptionSpec("header", short: "H", value: "name: value", help: "An extra request header (repeatable)."),
        OptionSpec("data", short: "d", value: "data", help: """
            Send DATA as the body (POST, application/x-www-form-urlencoded unless -H says otherwise); \
            @FILE reads the file, dropping newlines, as curl does. Several -d are joined with '&'.
            """),
        OptionSpec("data-binary", value: "data|@file", help: """
            Send the data exactly; @FILE streams the file from disk while sending (never held in memory).
            """),
        OptionSpec("output", short: "o", value: "file", help: """
            Write the body to FILE instead of stdout, atomically: a temporary file renamed into place once \
            the transfer succeeded, so a failure never leaves a half-written FILE.
            """),
        OptionSpec("include", short: "i", help: "Include the response status line and headers in the output."),
        OptionSpec("head", short: "I", help: "Send HEAD and print only the response head."),
        OptionSpec("location", short: "L", help: """
            Follow redirects, resolving each new host through HTTPDNS again. 301/302/303 continue with GET \
            and no body; 307/308 keep the method and body. With -i every hop's head is printed, as curl does.
            """),
        OptionSpec("max-redirs", value: "n", help: "Most redirects followed with -L. Default 20."),
        OptionSpec("verbose", short: "v", help: """
            Tell on stderr which provider answered, the addresses to try, the address connected to, the TLS \
            SNI sent (the URL host) and whether the certificate verified.
            """),
        OptionSpec("silent", short: "s", help: "No progress bar (errors still print)."),
        OptionSpec("fail", short: "f", help: "Exit 1 with an error line on HTTP status 400 or above."),
        OptionSpec("fallback-ips", value: "url", help: """
            The domain-block redirect endpoint (IP-list format: GET URL?host=HOST → {"ips":[…]}): when the \
            host cannot be resolved or connected, ask it for an address and retry once there, still with \
            the real host in Host, SNI and certificate verification.
            """),
        OptionSpec("max-time", value: "seconds", help: """
            Time limit of the whole fetch: every address tried and every redirect hop. Default none.
            """),
        OptionSpec("connect-timeout", value: "seconds", help: "Time limit to connect, TLS included. Default 10, or --timeout."),
        OptionSpec("user-agent", short: "A", value: "name", help: "The User-Agent header. Default swift-httpdns."),
    ]

    var url: URL
    var method: String
    var headers: [HTTPTransportHeader] = []
    var body: Body?
    var outputPath: String?
    var include = false
    var headOnly = false
    var followRedirects = false
    var maxRedirects = 20
    var verbose = false
    var silent = false
    var failOnHTTPError = false
    var fallbackIPs: String?
    var maxTime: Double?
    var connectTimeout: Double?

    /// - Throws: ``UsageError`` for a bad URL, header, number or a body file that cannot be read.
    init(_ parsed: ParsedArguments, shared: SharedOptions, command: String) throws(UsageError) {
        func bad(_ message: String) -> UsageError { UsageError(message, command: command) }
        guard let text = parsed.positionals.first else { throw bad("missing <url>") }
        guard parsed.positionals.count == 1 else { throw bad("one <url> only; got \(parsed.positionals.count)") }
        url = try FetchOptions.parseURL(text, bad)

        for line in parsed.all("header") {
            guard let colon = line.firstIndex(of: ":") else { throw bad("bad -H '\(line)': expected 'Name: value'") }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces)
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            guard !name.isEmpty, name.utf8.allSatisfy(FetchOptions.isTokenByte) else {
                throw bad("bad -H '\(line)': the name must be an HTTP token")
            }
            guard !value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }) else {
                throw bad("bad -H '\(line)': line breaks are not allowed in values")
            }
            headers.append(HTTPTransportHeader(name: name, value: value))
        }
        if let agent = parsed.last("user-agent") {
            headers.removeAll { HTTPDNSASCII.equalsIgnoringCase($0.name, "user-agent") }
            headers.append(HTTPTransportHeader(name: "User-Agent", value: agent))
        }

        let dataParts = parsed.all("data")
        if let binary = parsed.last("data-binary") {
            guard dataParts.isEmpty else { throw bad("use either -d or --data-binary, not both") }
            body = binary.hasPrefix("@") ? .file(String(binary.dropFirst())) : .data(Data(binary.utf8))
            if case .file(let path) = body, !FileManager.default.isReadableFile(atPath: path) {
                throw bad("cannot read --data-binary file \(path)")
            }
        } else if !dataParts.isEmpty {
            var joined: [Data] = []
            for part in dataParts {
                if part.hasPrefix("@") {
                    let path = String(part.dropFirst())
                    guard let contents = FileManager.default.contents(atPath: path) else { throw bad("cannot read -d file \(path)") }
                    joined.append(Data(contents.filter { $0 != 0x0A && $0 != 0x0D }))
                } else {
                    joined.append(Data(part.utf8))
                }
            }
            body = .data(Data(joined.joined(separator: Data("&".utf8))))
        }

        headOnly = parsed.flag("head")
        method = parsed.last("request") ?? (headOnly ? "HEAD" : (body == nil ? "GET" : "POST"))
        guard !method.isEmpty, method.utf8.allSatisfy(FetchOptions.isTokenByte) else {
            throw bad("bad -X '\(method)': a method is an HTTP token such as GET or POST")
        }
        if headOnly, body != nil { throw bad("-I cannot send a body") }
        outputPath = parsed.last("output")
        include = parsed.flag("include") || headOnly
        followRedirects = parsed.flag("location")
        if let text = parsed.last("max-redirs") {
            guard let count = Int(text), (0...1000).contains(count) else { throw bad("bad --max-redirs '\(text)'") }
            maxRedirects = count
        }
        verbose = parsed.flag("verbose")
        silent = parsed.flag("silent")
        failOnHTTPError = parsed.flag("fail")
        fallbackIPs = parsed.last("fallback-ips") ?? shared.config.fallbackIPs
        if let fallbackIPs {
            let lower = fallbackIPs.lowercased()
            guard (lower.hasPrefix("http://") || lower.hasPrefix("https://")), URL(string: fallbackIPs)?.host != nil else {
                throw bad("bad --fallback-ips '\(fallbackIPs)': expected an http(s) URL")
            }
        }
        maxTime = try FetchOptions.seconds(parsed.last("max-time"), "--max-time", bad)
        connectTimeout = try FetchOptions.seconds(parsed.last("connect-timeout"), "--connect-timeout", bad) ?? shared.timeout
    }

    /// An absolute http(s) URL; a bare `host/path` gets `http://`, as curl does.
    static func parseURL(_ text: String, _ bad: (String) -> UsageError) throws(UsageError) -> URL {
        let full = text.contains("://") ? text : "http://" + text
        guard let url = URL(string: full), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = url.host, !host.isEmpty
        else {
            throw bad("bad URL '\(text)': expected http:// or https:// with a host")
        }
        return url
    }

    static func seconds(_ text: String?, _ name: String, _ bad: (String) -> UsageError) throws(UsageError) -> Double? {
        guard let text else { return nil }
        guard let value = Double(text), value > 0, value <= 86_400 else { throw bad("bad \(name) '\(text)': expected seconds") }
        return value
    }

    /// RFC 9110 `tchar`.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }
}
