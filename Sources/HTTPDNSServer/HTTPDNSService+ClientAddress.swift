@_spi(HTTPDNSPackage) import HTTPDNSCore
import HTTPServing

extension HTTPDNSService {
    /// The address of the client a request is answered for.
    ///
    /// The connection's peer (which the server has already replaced with the PROXY protocol source
    /// when a trusted balancer sent one), unless that peer is one of
    /// ``Configuration/trustedProxies``: then the rightmost untrusted hop of `X-Forwarded-For`
    /// (``HTTPDNSForwardedFor``). A header from anyone else is ignored.
    func clientAddress(of request: HTTPServer.Request) -> HTTPDNSIPAddress? {
        guard let peer = request.remoteAddress else { return nil }
        let trusted = configuration.trustedProxies
        guard !trusted.isEmpty, trusted.contains(peer) else { return peer }
        let values = request.headers.filter { HTTPDNSASCII.equalsIgnoringCase($0.name, "x-forwarded-for") }.map(\.value)
        return HTTPDNSForwardedFor.client(peer: peer, values: values, trusted: trusted)
    }

    /// The client's subnet to send upstream as EDNS Client Subnet, or nil (turned off, no engine,
    /// or a client address that is not public).
    func clientSubnet(of request: HTTPServer.Request) -> HTTPDNSClientSubnet? {
        guard engine != nil, configuration.upstream.sendsClientSubnet, let client = clientAddress(of: request) else { return nil }
        return HTTPDNSClientSubnet(client: client)
    }
}

extension HTTPDNSService {
    /// Whether EDNS `options` (code, length, data triples) hold a Client Subnet option with source
    /// prefix length 0: the client asks that no address information be sent (RFC 7871 §7.1.2).
    static func optsOutOfClientSubnet(_ options: [UInt8]) -> Bool {
        guard case .found(let data) = HTTPDNSClientSubnet.findOption(in: options), data.count >= 4 else { return false }
        return data[data.startIndex + 2] == 0
    }
}
