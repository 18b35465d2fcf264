import Foundation
import HTTPDNS
import HTTPDNSCore
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A `URLProtocol` that sends requests for protected hosts to addresses HTTPDNS chose, keeping the
/// real host in `Host`, TLS SNI and certificate verification.
///
/// Install it with one line, ``install(_:into:)`` or
/// `URLSessionConfiguration.httpdnsProtected(client:)`; existing `URLSession` code then needs no
/// change. Requests for hosts the engine does not protect, IP literals, and non-HTTP schemes pass
/// through to the next protocol.
///
/// Linux notes (swift-corelibs-foundation, observed with Swift 6.3):
/// - `URLProtocol.registerClass` does not reach `URLSession.shared` or sessions made from
///   configurations; put the class into the configuration's `protocolClasses` instead (``install(_:into:)``).
/// - A custom protocol reporting `wasRedirectedTo` crashes the session ("doesn't currently handle
///   redirects directly"), so this protocol follows redirects itself, re-resolving each new host
///   (301/302/303 become GET without a body, 307/308 keep method and body) and reports the final
///   response, whose `url` is the last hop's.
/// - The session adds `Cookie` from its storage before calling a custom protocol but does not store
///   `Set-Cookie` from its answers; this protocol stores them in the installed configuration's
///   `httpCookieStorage` under the original URL when `httpShouldHandleCookies` is set.
/// - The session does not apply `httpAdditionalHeaders` for custom protocols; this protocol applies
///   the installed configuration's (a request's own header of the same name wins).
/// - The session keeps only the last `didLoad` chunk for completion-handler tasks, so the body is
///   delivered in one piece when the transfer ends (see ``HTTPDNSClient/bytes(for:)`` for streaming).
/// - Request properties (`URLProtocol.setProperty`) do not survive the bridge to `URLRequest`, so the
///   ``handledKey`` mark works only where the platform keeps them; this protocol never re-enters
///   `URLSession` (it sends through libcurl), so it cannot loop.
/// - A custom protocol cannot see the session it serves, so the installation is process-wide: the
///   last ``install(_:into:)`` decides the client and cookie storage.
open class HTTPDNSURLProtocol: URLProtocol {
    /// A request carrying this property (any value) is left alone: set it on requests that must not
    /// be protected, or that another layer already routed (no loops).
    public static let handledKey = "swift-httpdns.handled"

    struct Installation: Sendable {
        var client: HTTPDNSClient
        var cookieStorage: HTTPCookieStorage?
        /// The configuration's `httpAdditionalHeaders`, which the session does not apply for custom
        /// protocols.
        var additionalHeaders: [String: String]
    }

    private static let installation = HTTPDNSLock<Installation?>(nil)
    private let running = HTTPDNSLock<(task: HTTPDNSClientTask?, forwarder: ProtocolForwarder?)>((nil, nil))

    /// Makes `client` serve this protocol and puts the protocol first in `configuration.protocolClasses`,
    /// keeping the classes already there.
    public static func install(_ client: HTTPDNSClient, into configuration: URLSessionConfiguration) {
        var headers: [String: String] = [:]
        for (name, value) in configuration.httpAdditionalHeaders ?? [:] {
            if let name = name.base as? String, let value = value as? String { headers[name] = value }
        }
        installation.withLock {
            $0 = Installation(client: client, cookieStorage: configuration.httpCookieStorage, additionalHeaders: headers)
        }
        let others = (configuration.protocolClasses ?? []).filter { $0 != HTTPDNSURLProtocol.self }
        configuration.protocolClasses = [HTTPDNSURLProtocol.self] + others
    }

    /// The client serving the protocol, once installed.
    public static var client: HTTPDNSClient? {
        installation.withLock { $0?.client }
    }

    open override class func canInit(with request: URLRequest) -> Bool {
        guard property(forKey: handledKey, in: request) == nil,
              let url = request.url, let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = url.host, !host.isEmpty, !HTTPDNSIPAddress.isLiteral(host),
              let client = installation.withLock({ $0?.client })
        else { return false }
        return client.engine.protects(host)
    }

    open override class func canInit(with task: URLSessionTask) -> Bool {
        guard let request = task.currentRequest ?? task.originalRequest else { return false }
        return canInit(with: request)
    }

    open override class func canonicalRequest(for request: URLRequest) -> URLRequest {
        request
    }

    open override func startLoading() {
        guard let installation = Self.installation.withLock({ $0 }) else {
            client?.urlProtocol(self, didFailWithError: URLError(.unsupportedURL))
            return
        }
        let cookies: HTTPDNSClient.CookieHandling = installation.cookieStorage.map { .storeOnly($0) } ?? .none
        var request = self.request
        for (name, value) in installation.additionalHeaders where request.value(forHTTPHeaderField: name) == nil {
            request.setValue(value, forHTTPHeaderField: name)
        }
        let forwarder = ProtocolForwarder(self)
        let task = installation.client.start(request, followRedirects: true, cookies: cookies, delegate: forwarder)
        running.withLock { $0 = (task, forwarder) }
    }

    open override func stopLoading() {
        let (task, forwarder) = running.withLock { running in
            defer { running = (nil, nil) }
            return running
        }
        forwarder?.stop()
        task?.cancel()
    }
}

/// Hands client events to the protocol's `URLProtocolClient`, on the task's own work queue.
///
/// swift-corelibs-foundation requires every `URLProtocolClient` call to run on the task's
/// `workQueue` ("All operations must run on this queue"): the calls read the session's task
/// registry, which that queue mutates, and concurrent tasks crash otherwise. The queue is internal,
/// so it is found by reflection once per request; should a future Foundation rename it, a private
/// serial queue keeps the calls ordered (and the limitation is back).
///
/// The body is handed over in one piece at the end: swift-corelibs-foundation keeps only the LAST
/// `didLoad` chunk for tasks with a completion handler (and for the async `data(for:)`), so
/// streaming chunk by chunk would lose data there. Code that needs a streamed body uses
/// ``HTTPDNSClient/bytes(for:)``.
private final class ProtocolForwarder: HTTPDNSClientDelegate, @unchecked Sendable {
    private let owner: HTTPDNSURLProtocol
    private let queue: DispatchQueue
    private let state = HTTPDNSLock((body: Data(), stopped: false))

    init(_ owner: HTTPDNSURLProtocol) {
        self.owner = owner
        self.queue = ProtocolForwarder.workQueue(of: owner.task)
            ?? DispatchQueue(label: "swift-httpdns.url-protocol.client")
    }

    /// No calls reach the client after `stopLoading`.
    func stop() {
        state.withLock { $0.stopped = true }
    }

    private func deliver(_ call: @escaping @Sendable (HTTPDNSURLProtocol, any URLProtocolClient) -> Void) {
        queue.async { [self] in
            guard !state.withLock({ $0.stopped }), let client = owner.client else { return }
            call(owner, client)
        }
    }

    func didReceive(response: HTTPURLResponse, connection: HTTPDNSConnectionReport) {
        deliver { owner, client in client.urlProtocol(owner, didReceive: response, cacheStoragePolicy: .notAllowed) }
    }

    func didReceive(data: Data) {
        state.withLock { $0.body.append(data) }
    }

    func didComplete(error: (any Error)?) {
        if let error {
            deliver { owner, client in client.urlProtocol(owner, didFailWithError: error) }
            return
        }
        let data = state.withLock { state -> Data in
            defer { state.body = Data() }
            return state.body
        }
        deliver { owner, client in
            if !data.isEmpty { client.urlProtocol(owner, didLoad: data) }
            client.urlProtocolDidFinishLoading(owner)
        }
    }

    /// The internal `workQueue` of a corelibs `URLSessionTask`.
    static func workQueue(of task: URLSessionTask?) -> DispatchQueue? {
        guard let task else { return nil }
        var mirror: Mirror? = Mirror(reflecting: task)
        while let current = mirror {
            for child in current.children where child.label == "workQueue" {
                if let queue = child.value as? DispatchQueue { return queue }
            }
            mirror = current.superclassMirror
        }
        return nil
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
