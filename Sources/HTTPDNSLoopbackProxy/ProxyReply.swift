/// The answers the proxy itself writes to a client.
enum ProxyReply {
    /// A `CONNECT`'s success, sent before the tunnel's first byte.
    static let established = Array("HTTP/1.1 200 Connection established\r\n\r\n".utf8)

    /// `status` with a one-line plain-text body saying why, and `Connection: close`.
    static func bytes(status: Int, reason: String) -> [UInt8] {
        let phrase: String
        switch status {
        case 400: phrase = "Bad Request"
        case 403: phrase = "Forbidden"
        case 407: phrase = "Proxy Authentication Required"
        case 408: phrase = "Request Timeout"
        case 431: phrase = "Request Header Fields Too Large"
        case 501: phrase = "Not Implemented"
        case 502: phrase = "Bad Gateway"
        case 503: phrase = "Service Unavailable"
        case 504: phrase = "Gateway Timeout"
        case 505: phrase = "HTTP Version Not Supported"
        default: phrase = "Error"
        }
        let body = "httpdns proxy: \(reason.filter { $0 != "\r" && $0 != "\n" })\n"
        var text = "HTTP/1.1 \(status) \(phrase)\r\n"
        if status == 407 { text += "Proxy-Authenticate: Basic realm=\"httpdns\"\r\n" }
        text += "Content-Type: text/plain; charset=utf-8\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n"
        return Array((text + body).utf8)
    }
}
