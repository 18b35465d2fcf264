/// The scenarios where the URL protocol route differs from plain `URLSession` on purpose, each
/// naming its row in the README table "URLProtocol route: corelibs limits".
enum DifferentialExpectations {
    static let urlProtocol: [String: String] = [
        "redirect-307-follow": "307/308 resend the body",
        "redirect-308-follow": "307/308 resend the body",
        "authorization-cross-host-redirect": "Authorization on a cross-host redirect",
        "cookies-http2": "Cookies from HTTP/2 answers",
        "timeout-resource": "timeoutIntervalForResource",
        "challenge-401": "401 challenges",
    ]
}
