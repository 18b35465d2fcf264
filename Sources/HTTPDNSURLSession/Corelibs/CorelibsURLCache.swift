import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Workaround: corelibs looks every data task up in the configuration's `URLCache`, on disk, before
/// it makes the task's protocol, and this protocol never uses what it finds.
///
/// Observed (swift-corelibs-foundation, Swift 6.3): `URLSessionTask` asks the cache for every data
/// task before it picks a protocol (`_getProtocol`: `getCachedResponse(for:)`, which hops to a
/// background queue and back, and `cachedResponse(for:)` lists the cache's directory to find an
/// entry), then hands the answer to the protocol it makes. ``HTTPDNSURLProtocol`` ignores that answer
/// (it sends every request; corelibs never lets a custom protocol's responses be stored either), so
/// for its tasks the look-up is pure cost: 15,000 requests of bench row 4 (URLSession + the protocol,
/// 16 in flight, nginx included) took 4.81 s of CPU with it and 4.13 s without (medians of five
/// runs each, alternated), about 45 µs per request; their throughput did not move measurably.
///
/// Installing therefore puts this cache in front of the configuration's: every call goes to the
/// cache the configuration had (the same storage, capacities and entries), except that look-up for a
/// task that this protocol will serve, which it answers at once with nothing, as corelibs does for a
/// session without a cache. Which protocol serves a task is decided as corelibs decides it: the first
/// class of the session's `protocolClasses` whose `canInit(with:)` takes the task's request. Tasks of
/// another protocol (a host no client protects, a class the user put first) are looked up as before.
///
/// The corelibs internal it reads (the task's session) is the one ``CorelibsLayout`` checks at
/// installation; without that check's success every look-up goes to the cache, as before.
final class CorelibsURLCache: URLCache, @unchecked Sendable {
    // @unchecked: the only stored property is a `let` to a cache that corelibs calls from any thread.

    /// The configuration's own cache, which receives every call.
    let wrapped: URLCache

    /// Puts a cache in front of `wrapped`. Its own storage is never used: it is made with no
    /// capacity and a directory that cannot be created (corelibs then keeps none), and every
    /// method that would reach it is forwarded.
    init(wrapping wrapped: URLCache) {
        self.wrapped = wrapped
        super.init(memoryCapacity: 0, diskCapacity: 0, diskPath: "/dev/null")
    }

    /// The configuration's cache with this one in front of it (once; nil stays nil).
    static func inFront(of cache: URLCache?) -> URLCache? {
        guard let cache, !(cache is CorelibsURLCache) else { return cache }
        return CorelibsURLCache(wrapping: cache)
    }

    /// Whether corelibs will give `task` to ``HTTPDNSURLProtocol``: the first class of its session's
    /// `protocolClasses` that takes the request, as `URLSessionTask` picks it.
    static func servedByHTTPDNS(_ task: URLSessionTask) -> Bool {
        guard case .success(let layout)? = CorelibsLayout.checked, let request = task.currentRequest,
              let session = layout.session(of: task)
        else { return false }
        let chosen: AnyClass? = (session.configuration.protocolClasses ?? []).first { candidate in
            (candidate as? URLProtocol.Type)?.canInit(with: request) ?? false
        }
        return chosen == HTTPDNSURLProtocol.self
    }

    override func getCachedResponse(for dataTask: URLSessionDataTask, completionHandler: @Sendable @escaping (CachedURLResponse?) -> Void) {
        guard Self.servedByHTTPDNS(dataTask) else {
            return wrapped.getCachedResponse(for: dataTask, completionHandler: completionHandler)
        }
        // Synchronous, as corelibs' own answer for a task without a request.
        completionHandler(nil)
    }

    // Everything else is the configuration's cache.

    override func cachedResponse(for request: URLRequest) -> CachedURLResponse? {
        wrapped.cachedResponse(for: request)
    }

    override func storeCachedResponse(_ cachedResponse: CachedURLResponse, for request: URLRequest) {
        wrapped.storeCachedResponse(cachedResponse, for: request)
    }

    override func storeCachedResponse(_ cachedResponse: CachedURLResponse, for dataTask: URLSessionDataTask) {
        wrapped.storeCachedResponse(cachedResponse, for: dataTask)
    }

    override func removeCachedResponse(for request: URLRequest) {
        wrapped.removeCachedResponse(for: request)
    }

    override func removeCachedResponse(for dataTask: URLSessionDataTask) {
        wrapped.removeCachedResponse(for: dataTask)
    }

    override func removeAllCachedResponses() {
        wrapped.removeAllCachedResponses()
    }

    override func removeCachedResponses(since date: Date) {
        wrapped.removeCachedResponses(since: date)
    }

    override var memoryCapacity: Int {
        get { wrapped.memoryCapacity }
        set { wrapped.memoryCapacity = newValue }
    }

    override var diskCapacity: Int {
        get { wrapped.diskCapacity }
        set { wrapped.diskCapacity = newValue }
    }

    override var currentMemoryUsage: Int { wrapped.currentMemoryUsage }

    override var currentDiskUsage: Int { wrapped.currentDiskUsage }
}
