import Foundation
import HTTPDNS
import HTTPDNSCore
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A `URLProtocol` that sends requests for protected hosts to addresses HTTPDNS chose, keeping the
/// real host in `Host`, TLS SNI and certificate verification.
///
/// Install it with one line, `configuration.httpdnsInstall(client)` or
/// `URLSessionConfiguration.httpdnsProtected(client:)`; existing `URLSession` code then needs no
/// change. Requests for hosts no installed client protects, IP literals, and non-HTTP schemes pass
/// through to the next protocol.
///
/// Each installation belongs to its configuration (and the sessions made from it): two sessions
/// with different clients, cookie storages and `httpAdditionalHeaders` never mix.
///
/// Linux notes (swift-corelibs-foundation, observed with Swift 6.3; the README table
/// "URLProtocol route: corelibs limits" lists what stays different):
/// - `URLProtocol.registerClass` does not reach `URLSession.shared` or sessions made from
///   configurations; put the class into the configuration's `protocolClasses` instead (`URLSessionConfiguration.httpdnsInstall(_:)`).
/// - A custom protocol reporting `wasRedirectedTo` crashes the session, so this protocol follows
///   redirects itself (asking the task's delegate, `willPerformHTTPRedirection`, as `URLSession`
///   does; a refused redirect is delivered as the response), re-resolving each new host.
/// - The session adds `Cookie` from its storage but does not store `Set-Cookie` from a custom
///   protocol's answers, nor apply `httpAdditionalHeaders`: this protocol does both, from the
///   session's own configuration.
/// - Upload bodies, download files, whole bodies for completion handlers and the request timeout
///   rule use internal state of corelibs, read or written in the `CorelibsReflection+…` files.
/// - Request properties (`URLProtocol.setProperty`) do not survive the bridge to `URLRequest`, so the
///   `handledKey` mark works only where the platform keeps them; this protocol never re-enters
///   `URLSession` (it sends through libcurl), so it cannot loop.
open class HTTPDNSURLProtocol: URLProtocol {
    /// A request carrying this property (any value) is left alone: set it on requests that must not
    /// be protected, or that another layer already routed (no loops).
    package static let handledKey = "swift-httpdns.handled"

    private let running = HTTPDNSLock<ProtocolForwarder?>(nil)

    /// Makes `client` serve this protocol for sessions made from `configuration`, and puts the
    /// protocol first in `configuration.protocolClasses`, keeping the classes already there.
    ///
    /// Installing again replaces the client for this configuration only.
    package static func install(_ client: HTTPDNSClient, into configuration: URLSessionConfiguration) {
        Installation.attach(client, to: configuration)
        let others = (configuration.protocolClasses ?? []).filter { $0 != HTTPDNSURLProtocol.self }
        configuration.protocolClasses = [HTTPDNSURLProtocol.self] + others
    }

    /// The client installed into `configuration`, if any.
    public static func client(for configuration: URLSessionConfiguration) -> HTTPDNSClient? {
        Installation.of(configuration)?.client
    }

    open override class func canInit(with request: URLRequest) -> Bool {
        guard property(forKey: handledKey, in: request) == nil,
              let url = request.url, let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = url.host, !host.isEmpty, !HTTPDNSIPAddress.isLiteral(host)
        else { return false }
        // The session is not known here: take the request when any live installation protects the
        // host; `startLoading` then uses the session's own (unpinned when it does not protect it).
        return Installation.anyProtects(host)
    }

    open override class func canonicalRequest(for request: URLRequest) -> URLRequest {
        request
    }

    open override func startLoading() {
        guard let task, let session = CorelibsReflection.session(of: task),
              let installation = Installation.of(session.configuration)
        else {
            client?.urlProtocol(self, didFailWithError: URLError(.unsupportedURL, userInfo: [
                NSLocalizedDescriptionKey: "HTTPDNSURLProtocol is not installed in this session's configuration (use httpdnsInstall).",
            ]))
            return
        }
        let forwarder = ProtocolForwarder(owner: self, task: task, session: session)
        running.withLock { $0 = forwarder }
        forwarder.start(request, client: installation.client)
    }

    open override func stopLoading() {
        let forwarder = running.withLock { running in
            defer { running = nil }
            return running
        }
        forwarder?.stop()
    }
}

extension URLSessionConfiguration {
    /// Installs ``HTTPDNSURLProtocol`` served by `client` into this configuration (prepended, other
    /// protocol classes kept): the one line that protects existing `URLSession` code.
    public func httpdnsInstall(_ client: HTTPDNSClient) {
        HTTPDNSURLProtocol.install(client, into: self)
    }

    /// A default configuration with ``HTTPDNSURLProtocol`` installed.
    public static func httpdnsProtected(client: HTTPDNSClient) -> URLSessionConfiguration {
        let configuration = URLSessionConfiguration.default
        configuration.httpdnsInstall(client)
        return configuration
    }
}
