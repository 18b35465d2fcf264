import Foundation
import HTTPDNSTestSupport
import XCTest
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import HTTPDNSURLSession

/// Each corelibs workaround still finds what it relies on: these fail when swift-corelibs-foundation
/// renames, retypes or drops a field the URL protocol reads or writes (house style, rule 16).
final class CorelibsReflectionTests: XCTestCase {
    private let session = URLSession(configuration: .ephemeral)
    private let url = URL(string: "http://reflection.invalid/")!

    private func layout() throws -> CorelibsLayout {
        try CorelibsLayout.checkCorelibs().get()
    }

    func testThisToolchainPassesTheInstallCheck() throws {
        XCTAssertNoThrow(try CorelibsLayout.checkCorelibs().get())
        XCTAssertNotNil(CorelibsLayout.checked, "kept for requests")
        // Run again, uncached: the probe session is made, read and invalidated each time.
        XCTAssertNoThrow(try CorelibsLayout(checking: .corelibs))
        XCTAssertTrue(CorelibsPlatform.toolchain.hasPrefix("Swift 6."), CorelibsPlatform.toolchain)
    }

    func testTheTaskWorkQueueIsFound() throws {
        let queue = try layout().workQueue(of: session.dataTask(with: url))
        XCTAssertEqual(queue.label, "org.swift.URLSessionTask.WorkQueue")
    }

    func testTheTaskSessionIsFound() throws {
        XCTAssertTrue(try layout().session(of: session.dataTask(with: url)) === session)
    }

    func testEveryUploadBodyShapeIsRead() throws {
        let layout = try layout()
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        guard case .data(let data)? = try layout.body(of: session.uploadTask(with: request, from: Data("abc".utf8))) else {
            return XCTFail("uploadTask(with:from:) body not found")
        }
        XCTAssertEqual(data, Data("abc".utf8))
        let file = URL(fileURLWithPath: "/etc/hostname")
        guard case .file(let found)? = try layout.body(of: session.uploadTask(with: request, fromFile: file)) else {
            return XCTFail("uploadTask(with:fromFile:) body not found")
        }
        XCTAssertEqual(found, file)
        XCTAssertNil(try layout.body(of: session.uploadTask(withStreamedRequest: request)), "a streamed upload records no body")
        request.httpBodyStream = InputStream(data: Data("xyz".utf8))
        guard case .stream? = try layout.body(of: session.dataTask(with: request)) else {
            return XCTFail("a data task's stream body not found")
        }
        guard case .some(.none) = try layout.body(of: session.dataTask(with: url)) else {
            return XCTFail("a GET's empty body not recognised")
        }
    }

    func testTheTaskReportingIsReadFromTheRegistry() throws {
        let layout = try layout()
        let completion = session.dataTask(with: url) { _, _, _ in }
        let delegated = URLSession(configuration: .ephemeral, delegate: DataRecorder(), delegateQueue: nil)
        let delegateTask = delegated.dataTask(with: url)
        let download = session.downloadTask(with: url) { _, _, _ in }
        defer { delegated.invalidateAndCancel() }
        // The registry is filled asynchronously on the session's queue; read it there.
        let found = try [completion, delegateTask, download].map { task in
            try layout.workQueue(of: task).sync { try layout.reporting(of: task, in: XCTUnwrap(layout.session(of: task))).0 }
        }
        XCTAssertEqual(found, [.dataCompletion, .delegate, .downloadCompletion])
        for task in [completion, delegateTask, download] { task.cancel() }
    }

    func testATaskMissingFromTheRegistryFailsItsRequestInsteadOfGuessing() throws {
        let layout = try layout()
        let task = session.dataTask(with: url)
        // A session with no tasks (nothing writes its registry): what a finished task meets.
        let other = URLSession(configuration: .ephemeral)
        defer { other.invalidateAndCancel() }
        XCTAssertThrowsError(try layout.reporting(of: task, in: other)) { error in
            let error = error as? HTTPDNSURLSessionError
            XCTAssertEqual(error?.code, .unexpectedPlatformState)
            XCTAssertEqual(error?.internalName, "URLSession._TaskRegistry.behaviours")
        }
        task.cancel()
    }

    func testEnumWitnessesReadTheCaseAndItsPayloadInPlace() throws {
        enum Shape {
            case named(String, Int)
            case anonymous
            case pair(AnyObject, URLSessionTaskDelegate?)
        }
        let witnesses = try XCTUnwrap(CorelibsEnumWitnesses(of: Shape.self))
        XCTAssertNil(CorelibsEnumWitnesses(of: Int.self))
        XCTAssertNil(CorelibsEnumWitnesses(of: String?.self), "an optional is not read as an enum")
        let delegate = DataRecorder()
        var values: [Shape] = [.named("x", 7), .anonymous, .pair(NSObject(), delegate)]
        let tags = values.indices.map { index in withUnsafePointer(to: &values[index]) { witnesses.tag(of: $0) } }
        XCTAssertEqual(Set(tags).count, 3, "\(tags)")
        let found = withUnsafeMutablePointer(to: &values[2]) { value in
            witnesses.withPayload(of: value, tag: tags[2]) { $0.load(fromByteOffset: 8, as: URLSessionTaskDelegate?.self) }
        }
        XCTAssertTrue(found === delegate)
        guard case .pair(_, let after) = values[2], after === delegate else { return XCTFail("the case was not put back") }
    }

    func testProtocolPropertiesCanBeWritten() throws {
        let layout = try layout()
        let task = session.downloadTask(with: url)
        let urlProtocol = HTTPDNSURLProtocol(task: task, cachedResponse: nil, client: nil)
        XCTAssertNoThrow(try layout.setProperty(URL(fileURLWithPath: "/tmp/x"), for: .temporaryFileURL, on: urlProtocol))
        XCTAssertNoThrow(try layout.setProperty(Data("body".utf8), for: .responseData, on: urlProtocol))
    }

    func testTheRequestTimeoutFlagIsRead() throws {
        let layout = try layout()
        var request = URLRequest(url: url, timeoutInterval: 5)
        XCTAssertFalse(layout.isTimeoutIntervalSet(request), "the initializer does not set the flag")
        request.timeoutInterval = 60
        XCTAssertTrue(layout.isTimeoutIntervalSet(request))
    }
}
