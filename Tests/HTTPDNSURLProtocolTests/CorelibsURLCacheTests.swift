import Foundation
import HTTPDNSCore
@testable import HTTPDNSURLSession
import XCTest
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The cache installation puts in front of the configuration's: the protocol's tasks skip corelibs'
/// look-up, everything else reaches the configuration's own cache.
final class CorelibsURLCacheTests: XCTestCase {
    /// A memory-only cache that counts the look-ups corelibs makes for tasks.
    private final class RecordingCache: URLCache, @unchecked Sendable {
        private let taskLookUps = HTTPDNSLock<[String]>([])

        init() {
            super.init(memoryCapacity: 1 << 20, diskCapacity: 0, diskPath: "/dev/null")
        }

        var lookedUp: [String] { taskLookUps.withLock { $0 } }

        override func getCachedResponse(for dataTask: URLSessionDataTask, completionHandler: @Sendable @escaping (CachedURLResponse?) -> Void) {
            taskLookUps.withLock { $0.append(dataTask.currentRequest?.url?.host ?? "?") }
            super.getCachedResponse(for: dataTask, completionHandler: completionHandler)
        }
    }

    func testInstallationPutsItInFrontOnceAndEveryCallReachesTheConfigurationsCache() throws {
        let own = RecordingCache()
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = own
        try configuration.httpdnsInstall(makeClient([:]))
        try configuration.httpdnsInstall(makeClient([:]))
        let front = try XCTUnwrap(configuration.urlCache as? CorelibsURLCache, "installation did not put its cache in front")
        XCTAssertTrue(front.wrapped === own, "installing twice wrapped the cache twice")

        let request = URLRequest(url: URL(string: "https://app.test/a")!)
        let response = HTTPURLResponse(url: request.url!, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: ["Content-Length": "3"])!
        front.storeCachedResponse(CachedURLResponse(response: response, data: Data("abc".utf8), storagePolicy: .allowedInMemoryOnly), for: request)
        XCTAssertEqual(own.cachedResponse(for: request)?.data, Data("abc".utf8), "a store did not reach the configuration's cache")
        XCTAssertEqual(front.cachedResponse(for: request)?.data, Data("abc".utf8))
        XCTAssertEqual(front.currentMemoryUsage, own.currentMemoryUsage)
        front.memoryCapacity = 1 << 21
        XCTAssertEqual(own.memoryCapacity, 1 << 21)
        front.removeCachedResponse(for: request)
        XCTAssertNil(own.cachedResponse(for: request), "a removal did not reach the configuration's cache")

        let none = URLSessionConfiguration.ephemeral
        none.urlCache = nil
        try none.httpdnsInstall(makeClient([:]))
        XCTAssertNil(none.urlCache, "a configuration without a cache got one")
    }

    func testTheProtocolsTasksSkipTheLookUpAndOtherTasksKeepIt() async throws {
        let origin = try Origin(address: "127.0.0.3")
        defer { origin.stop() }
        let own = RecordingCache()
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = own
        let client = makeClient(["app.test": ["127.0.0.3"]])
        try configuration.httpdnsInstall(client)
        let session = URLSession(configuration: configuration)
        defer { session.finishTasksAndInvalidate() }

        let (_, protected) = try await session.data(from: URL(string: "http://app.test:\(origin.port)/protected")!)
        XCTAssertEqual((protected as? HTTPURLResponse)?.statusCode, 200)
        // An IP literal is not the protocol's: corelibs' own HTTP serves it, after its look-up.
        let (_, plain) = try await session.data(from: URL(string: "http://127.0.0.3:\(origin.port)/plain")!)
        XCTAssertEqual((plain as? HTTPURLResponse)?.statusCode, 200)
        XCTAssertEqual(origin.requests.map(\.path), ["/protected", "/plain"])
        // If corelibs stops asking the cache per task, the second entry is missing: the workaround
        // (CorelibsURLCache) is then no longer needed.
        XCTAssertEqual(own.lookedUp, ["127.0.0.3"], "the protocol's task was looked up, or corelibs' own was not")
    }

    func testAClassPutBeforeTheProtocolKeepsTheLookUpForItsTasks() throws {
        final class First: URLProtocol {
            override class func canInit(with request: URLRequest) -> Bool { request.url?.path == "/first" }
            override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }
            override func startLoading() {}
            override func stopLoading() {}
        }
        let configuration = URLSessionConfiguration.ephemeral
        let client = makeClient(["app.test": ["127.0.0.3"]])
        try configuration.httpdnsInstall(client)
        configuration.protocolClasses = [First.self] + (configuration.protocolClasses ?? [])
        let session = URLSession(configuration: configuration)
        defer { session.invalidateAndCancel() }
        // Tasks are only made, not resumed: the decision reads the task's session and request.
        let first = session.dataTask(with: URL(string: "http://app.test/first")!)
        let other = session.dataTask(with: URL(string: "http://app.test/other")!)
        let literal = session.dataTask(with: URL(string: "http://127.0.0.3/other")!)
        XCTAssertFalse(CorelibsURLCache.servedByHTTPDNS(first), "a task the first class takes skipped the look-up")
        XCTAssertTrue(CorelibsURLCache.servedByHTTPDNS(other))
        XCTAssertFalse(CorelibsURLCache.servedByHTTPDNS(literal))
    }
}
