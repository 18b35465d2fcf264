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

    func testTheTaskWorkQueueIsFound() {
        XCTAssertNotNil(CorelibsReflection.workQueue(of: session.dataTask(with: url)))
    }

    func testTheTaskSessionIsFound() {
        XCTAssertTrue(CorelibsReflection.session(of: session.dataTask(with: url)) === session)
    }

    func testEveryUploadBodyShapeIsRead() throws {
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        guard case .data(let data)? = CorelibsReflection.body(of: session.uploadTask(with: request, from: Data("abc".utf8))) else {
            return XCTFail("uploadTask(with:from:) body not found")
        }
        XCTAssertEqual(data, Data("abc".utf8))
        let file = URL(fileURLWithPath: "/etc/hostname")
        guard case .file(let found)? = CorelibsReflection.body(of: session.uploadTask(with: request, fromFile: file)) else {
            return XCTFail("uploadTask(with:fromFile:) body not found")
        }
        XCTAssertEqual(found, file)
        request.httpBodyStream = InputStream(data: Data("xyz".utf8))
        guard case .stream? = CorelibsReflection.body(of: session.dataTask(with: request)) else {
            return XCTFail("a data task's stream body not found")
        }
        guard case .some(.none) = CorelibsReflection.body(of: session.dataTask(with: url)) else {
            return XCTFail("a GET's empty body not recognised")
        }
    }

    func testTheTaskReportingIsReadFromTheRegistry() {
        let queue = DispatchQueue(label: "reflection-test")
        let completion = session.dataTask(with: url) { _, _, _ in }
        let delegated = URLSession(configuration: .ephemeral, delegate: DataRecorder(), delegateQueue: nil)
        let delegateTask = delegated.dataTask(with: url)
        let download = session.downloadTask(with: url) { _, _, _ in }
        // The registry is filled asynchronously on the session's queue; read it there.
        let found = queue.sync { () -> [CorelibsReflection.Reporting] in
            let work = [completion, delegateTask, download].map { CorelibsReflection.workQueue(of: $0)! }
            return zip([completion, delegateTask, download], work).map { task, queue in
                queue.sync { CorelibsReflection.reporting(of: task, in: CorelibsReflection.session(of: task)!).0 }
            }
        }
        XCTAssertEqual(found, [.dataCompletion, .delegate, .downloadCompletion])
        for task in [completion, delegateTask, download] { task.cancel() }
    }

    func testProtocolPropertiesCanBeWritten() {
        let task = session.downloadTask(with: url)
        let urlProtocol = HTTPDNSURLProtocol(task: task, cachedResponse: nil, client: nil)
        XCTAssertTrue(CorelibsReflection.setProperty(URL(fileURLWithPath: "/tmp/x"), for: .temporaryFileURL, on: urlProtocol))
        XCTAssertTrue(CorelibsReflection.setProperty(Data("body".utf8), for: .responseData, on: urlProtocol))
    }

    func testTheRequestTimeoutFlagIsRead() {
        var request = URLRequest(url: url, timeoutInterval: 5)
        XCTAssertEqual(CorelibsReflection.isTimeoutIntervalSet(request), false, "the initializer does not set the flag")
        request.timeoutInterval = 60
        XCTAssertEqual(CorelibsReflection.isTimeoutIntervalSet(request), true)
    }
}
