import Foundation
import HTTPDNS
@_spi(HTTPDNSPackage) import HTTPDNSCore
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
/// Linux notes (swift-corelibs-foundation, observed with Swift 6.3; the table "URLProtocol route:
/// corelibs limits" of the article on protecting URLSession code lists what stays different):
/// - `URLProtocol.registerClass` does not reach `URLSession.shared` or sessions made from
///   configurations; put the class into the configuration's `protocolClasses` instead (`URLSessionConfiguration.httpdnsInstall(_:)`).
/// - A custom protocol reporting `wasRedirectedTo` crashes the session, so this protocol follows
///   redirects itself (asking the task's delegate, `willPerformHTTPRedirection`, as `URLSession`
///   does; a refused redirect is delivered as the response), re-resolving each new host.
/// - The session adds `Cookie` from its storage but does not store `Set-Cookie` from a custom
///   protocol's answers, nor apply `httpAdditionalHeaders`: this protocol does both, from the
///   session's own configuration.
/// - Upload bodies, download files, whole bodies for completion handlers and the request timeout
///   rule use internal state of corelibs, read or written in the `CorelibsLayout+…` files and
///   checked once, at the first installation (``HTTPDNSURLSessionError`` when one is gone).
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
    /// Installing again replaces the client for this configuration only. The first installation
    /// in a process checks the corelibs internals the route uses (`CorelibsLayout.checkCorelibs()`); the
    /// result is kept, so later ones cost nothing.
    ///
    /// - Throws: ``HTTPDNSURLSessionError/Code/unsupportedPlatform`` when one is missing or has
    ///   another type; `configuration` is then left as it was.
    package static func install(_ client: HTTPDNSClient, into configuration: URLSessionConfiguration) throws(HTTPDNSURLSessionError) {
        _ = try CorelibsLayout.checkCorelibs().get()
        attach(client, to: configuration)
    }

    /// ``install(_:into:)`` with the check run against `platform` instead of this process's corelibs
    /// (tests give stand-ins with one internal renamed or retyped); not kept.
    package static func install(
        _ client: HTTPDNSClient, into configuration: URLSessionConfiguration, checking platform: CorelibsPlatform
    ) throws(HTTPDNSURLSessionError) {
        _ = try CorelibsLayout(checking: platform)
        attach(client, to: configuration)
    }

    private static func attach(_ client: HTTPDNSClient, to configuration: URLSessionConfiguration) {
        Installation.attach(client, to: configuration)
        let others = (configuration.protocolClasses ?? []).filter { $0 != HTTPDNSURLProtocol.self }
        configuration.protocolClasses = [HTTPDNSURLProtocol.self] + others
        // Its tasks skip corelibs' look-up in the cache, which the protocol would ignore (see there).
        configuration.urlCache = CorelibsURLCache.inFront(of: configuration.urlCache)
    }

    /// The client installed into `configuration`, if any.
    public static func client(for configuration: URLSessionConfiguration) -> HTTPDNSClient? {
        Installation.of(configuration)?.client
    }

    open override class func canInit(with request: URLRequest) -> Bool {
        guard property(forKey: handledKey, in: request) == nil,
              let url = request.url, let scheme = url.scheme,
              HTTPDNSASCII.equalsIgnoringCase(scheme, "https") || HTTPDNSASCII.equalsIgnoringCase(scheme, "http"),
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
        let layout: CorelibsLayout
        switch CorelibsLayout.checked {
        case .success(let checked)?: layout = checked
        case .failure(let refusal)?: return fail(refusal)
        case nil: return fail(Self.notInstalled)
        }
        guard let task else {
            return fail(URLError(.unsupportedURL, userInfo: [NSLocalizedDescriptionKey: "HTTPDNSURLProtocol serves URLSession tasks only."]))
        }
        guard let session = layout.session(of: task) else {
            return fail(layout.unexpected(.session, "is empty (the task has already finished)"))
        }
        guard let installation = Installation.of(session.configuration) else {
            return fail(Self.notInstalled)
        }
        let reporting: (CorelibsReporting, URLSessionTaskDelegate?)
        let taskBody: CorelibsLayout.TaskBody?
        do throws(HTTPDNSURLSessionError) {
            reporting = try layout.reporting(of: task, in: session)
            // Data and download tasks build their body from the request; only uploads keep it aside.
            taskBody = task is URLSessionUploadTask ? try layout.body(of: task) : CorelibsLayout.TaskBody.none
        } catch {
            return fail(error)
        }
        let forwarder = ProtocolForwarder(
            owner: self, task: task, session: session, layout: layout, reporting: reporting.0, taskDelegate: reporting.1)
        running.withLock { $0 = forwarder }
        forwarder.start(request, body: taskBody, client: installation.client)
    }

    private static var notInstalled: URLError {
        URLError(.unsupportedURL, userInfo: [
            NSLocalizedDescriptionKey: "HTTPDNSURLProtocol is not installed in this session's configuration (use httpdnsInstall).",
        ])
    }

    /// Fails the load before it started (on the task's work queue, where `startLoading` runs).
    private func fail(_ error: any Error) {
        client?.urlProtocol(self, didFailWithError: error)
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
    ///
    /// The first installation in a process checks that this toolchain's swift-corelibs-foundation
    /// still has every internal the route reads (release builds too); the answer is kept.
    ///
    /// The configuration's `urlCache` (when it has one) is put behind a `URLCache` that forwards
    /// every call to it, except the look-up corelibs makes before each of the protocol's own tasks,
    /// answered at once with nothing: the protocol never uses a cached response, and corelibs reads
    /// the cache's directory on a background queue for every task.
    ///
    /// - Throws: ``HTTPDNSURLSessionError`` with code
    ///   ``HTTPDNSURLSessionError/Code/unsupportedPlatform``, naming the internal and the toolchain,
    ///   when one is missing or has another type; nothing is installed then (use `HTTPDNSClient` or
    ///   the loopback proxy on that toolchain).
    public func httpdnsInstall(_ client: HTTPDNSClient) throws(HTTPDNSURLSessionError) {
        try HTTPDNSURLProtocol.install(client, into: self)
    }

    /// A default configuration with ``HTTPDNSURLProtocol`` installed.
    ///
    /// - Throws: ``HTTPDNSURLSessionError``, as `httpdnsInstall(_:)`.
    public static func httpdnsProtected(client: HTTPDNSClient) throws(HTTPDNSURLSessionError) -> URLSessionConfiguration {
        let configuration = URLSessionConfiguration.default
        try configuration.httpdnsInstall(client)
        return configuration
    }
}
