import Foundation
@_spi(HTTPDNSPackage) import HTTPDNSCore
import HTTPDNSTransport
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The `HTTPURLResponse` a client made last, given again for a head that repeats it.
///
/// Foundation canonicalises every field name as an `HTTPURLResponse` is made (`capitalized` and a
/// locale-aware comparison with `WWW-Authenticate`, per name): in bench row 5's profile that was a
/// fifth of the caller's share of each request, and its client took 5–16 % less CPU without it
/// (Performance.md). A response is immutable, and the one made from the same URL, status, version
/// and fields (in order, spelled alike) is that same response, so a head equal to the last one gets
/// the object made for it. What repeats is a resource fetched again (a file, a polled endpoint)
/// within the second its `Date` field names; a head that differs pays a comparison that stops at the
/// first difference, and takes the slot.
///
/// One per client: a response never reaches another client's callers.
final class ResponseMemo: Sendable {
    private struct Slot: Sendable {
        let url: URL
        let statusCode: Int
        let httpVersion: String
        let headers: [HTTPTransportHeader]
        let response: HTTPURLResponse
    }

    private let last = HTTPDNSLock<Slot?>(nil)

    /// The response for `head` at `url`: the last one made when `head` repeats its head, otherwise a
    /// new one (``HTTPDNSClient/makeResponse(_:url:)``), kept in its place.
    func response(for head: HTTPTransportResponseHead, url: URL) -> HTTPURLResponse {
        // Copied out, so the comparison runs outside the lock.
        if let slot = last.withLock({ $0 }), slot.statusCode == head.statusCode, slot.httpVersion == head.httpVersion,
            slot.headers == head.headers, slot.url == url {
            return slot.response
        }
        let response = HTTPDNSClient.makeResponse(head, url: url)
        let slot = Slot(url: url, statusCode: head.statusCode, httpVersion: head.httpVersion, headers: head.headers, response: response)
        last.withLock { $0 = slot }
        return response
    }
}
