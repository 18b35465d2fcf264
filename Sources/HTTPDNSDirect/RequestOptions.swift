import Foundation
import HTTPDNSTransport
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How one request is driven beyond the client's configuration: what `HTTPDNSURLProtocol` passes
/// so that a request behaves as `URLSession` would have sent it.
package struct RequestOptions: Sendable {
    package init() {}

    /// Who sends and stores cookies. Default: nobody.
    package var cookies: HTTPDNSClient.CookieHandling = .none
    /// The body when it is not in the request (corelibs keeps an upload task's on the task).
    /// Default nil: `httpBody` or `httpBodyStream` of the request.
    package var body: RequestBody? = nil
    /// Asked for a fresh body stream when a spent one must be sent again (a 307/308 redirect).
    /// Default nil: such a request fails with `URLError(.requestBodyStreamExhausted)`.
    package var newBodyStream: RequestBody.NewBodyStream? = nil
    /// Asked before each redirect is followed, with the redirect response and the request that
    /// would follow; returns the request to send, or nil to stop and deliver the redirect response
    /// itself (with its body). Default nil: follow.
    package var redirect: (@Sendable (HTTPURLResponse, URLRequest) async -> URLRequest?)? = nil
    /// The limit for no byte moving, replacing the client's ``HTTPDNSClient/Configuration/idleTimeout``
    /// (and capping its connect timeout). Default nil: the client's.
    package var idleTimeout: Duration? = nil
    /// Offer content codings and deliver bodies decoded, as `URLSession` does. Default false.
    package var decodesContent = false
    /// Told how many body bytes each read handed to libcurl (upload progress). Default nil.
    package var bodyProgress: (@Sendable (Int) -> Void)? = nil
    /// Where the response body waits for a slow reader; the transfer pauses while it is full.
    /// Default nil: delivered as it arrives.
    package var receiveBuffer: HTTPTransportReceiveBuffer? = nil
}

/// A redirect answer kept until someone decides whether to follow it.
struct RedirectAnswer: Sendable {
    /// The 3xx response, for the URL that answered it.
    package var response: HTTPURLResponse
    /// Its body (bounded by ``AttemptDelegate/redirectBodyLimit``).
    package var body: Data
    /// How it was reached.
    package var connection: HTTPDNSConnectionReport
}
