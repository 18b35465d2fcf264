import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSServer
import HTTPDNSTestSupport
import HTTPDNSNetworking
import HTTPDNSURLSession
import HTTPServing
import XCTest
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Issue 8, route 2: each defect found by a new user, as a test that failed before the fix.
final class URLSessionParityTests: XCTestCase {
    private var origin: Origin!
    private var client: HTTPDNSClient!

    override func setUpWithError() throws {
        origin = try Origin(address: "127.0.0.1", respond: Self.routes)
        client = makeClient(["parity.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]])
    }

    override func tearDown() {
        origin.stop()
    }

    private func url(_ path: String, host: String = "parity.test") -> URL {
        URL(string: "http://\(host):\(origin.port)\(path)")!
    }

    /// `/slow?ms=N`: the head after N ms; `/drip?n=N&ms=M`: N chunks of 1 KiB, M ms apart;
    /// `/307` and `/302`: redirects to `/echo` on other.test; `/login`: sets a cookie; anything else echoes.
    @Sendable static func routes(_ request: HTTPServer.Request) -> HTTPServer.Response {
        let number = { (name: String) in request.queryValue(name).flatMap(Int.init) ?? 0 }
        switch request.path {
        case "/slow":
            usleep(UInt32(min(number("ms"), 10_000)) * 1000)
            return .text("late")
        case "/drip":
            let left = HTTPDNSLock(number("n"))
            let delay = UInt32(min(number("ms"), 1000)) * 1000
            return HTTPServer.Response(streamLength: nil) {
                guard left.withLock({ left in defer { left -= 1 }; return left > 0 }) else { return nil }
                usleep(delay)
                return Data(repeating: 0x64, count: 1024)
            }
        case "/307", "/302", "/308":
            let port = request.header("host")?.split(separator: ":").last.map(String.init) ?? "80"
            return HTTPServer.Response(
                status: Int(request.path.dropFirst())!,
                headers: [.init(name: "Location", value: "http://other.test:\(port)/echo")],
                body: Data("moved".utf8))
        case "/auth":
            guard request.header("authorization") == "Basic dXNlcjpwYXNzd29yZA==" else {
                return HTTPServer.Response(
                    status: 401, headers: [.init(name: "WWW-Authenticate", value: "Basic realm=\"parity\"")], body: Data("no".utf8))
            }
            return .text("welcome")
        case "/login":
            var response = Origin.echo(request)
            response.headers.append(.init(name: "Set-Cookie", value: "session=\(request.queryValue("who") ?? "x"); Path=/"))
            return response
        default:
            var response = Origin.echo(request)
            response.headers.append(.init(name: "X-Authorization", value: request.header("authorization") ?? ""))
            return response
        }
    }

    // MARK: 1. Uploads send their body

    func testEveryUploadAPISendsItsBody() async throws {
        let session = try protectedSession(client)
        let payload = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        var request = URLRequest(url: url("/upload"))
        request.httpMethod = "POST"

        let (fromData, _) = try await session.upload(for: request, from: payload)
        XCTAssertEqual(fromData, payload, "upload(for:from:)")

        let file = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-upload-\(UUID().uuidString)")
        try payload.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let (fromFile, _) = try await session.upload(for: request, fromFile: file)
        XCTAssertEqual(fromFile, payload, "upload(for:fromFile:)")

        let fromTask: Data = try await withCheckedThrowingContinuation { continuation in
            session.uploadTask(with: request, from: payload) { data, _, error in
                if let error { continuation.resume(throwing: error) } else { continuation.resume(returning: data ?? Data()) }
            }.resume()
        }
        XCTAssertEqual(fromTask, payload, "uploadTask(with:from:)")
        XCTAssertEqual(origin.requests.map(\.body.count), [payload.count, payload.count, payload.count])

        let progress = DataRecorder()
        try URLSession(configuration: protectedConfiguration(client), delegate: progress, delegateQueue: nil)
            .uploadTask(with: request, from: payload).resume()
        let uploaded = await progress.finished()
        XCTAssertEqual(uploaded.bytesSent, Int64(payload.count), "didSendBodyData reached the whole body")
        XCTAssertEqual(uploaded.expectedToSend, Int64(payload.count))
    }

    // MARK: 2. Downloads deliver a file

    func testEveryDownloadAPIDeliversAFile() async throws {
        let session = try protectedSession(client)
        let source = url("/drip?n=40&ms=0")

        let (location, response) = try await session.download(from: source)
        defer { try? FileManager.default.removeItem(at: location) }
        XCTAssertEqual((response as? HTTPURLResponse)?.statusCode, 200)
        XCTAssertEqual(try Data(contentsOf: location).count, 40 * 1024, "download(from:)")

        let handled: (URL?, Int) = try await withCheckedThrowingContinuation { continuation in
            session.downloadTask(with: source) { location, _, error in
                if let error { continuation.resume(throwing: error); return }
                // The file is the app's to read (or move) inside the handler.
                continuation.resume(returning: (location, location.flatMap { try? Data(contentsOf: $0) }?.count ?? -1))
            }.resume()
        }
        XCTAssertNotNil(handled.0, "downloadTask(with:completionHandler:) got a location")
        XCTAssertEqual(handled.1, 40 * 1024)

        let delegate = DownloadRecorder()
        let delegated = try URLSession(configuration: protectedConfiguration(client), delegate: delegate, delegateQueue: nil)
        delegated.downloadTask(with: source).resume()
        let result = await delegate.finished()
        XCTAssertNil(result.error)
        XCTAssertEqual(result.bytes, 40 * 1024, "didFinishDownloadingTo: the file holds the body")
        XCTAssertGreaterThan(result.progressCalls, 0, "didWriteData was called")
    }

    // MARK: 3. A spent body stream on 307/308

    func testSpentBodyStreamOnA307FailsCleanlyOrAsksTheDelegate() async throws {
        let payload = Data(repeating: 0x42, count: 10_000)
        func streamed(_ path: String) -> URLRequest {
            var request = URLRequest(url: url(path))
            request.httpMethod = "POST"
            request.httpBodyStream = InputStream(data: payload)
            request.setValue(String(payload.count), forHTTPHeaderField: "Content-Length")
            return request
        }
        for path in ["/307", "/308"] {
            do {
                _ = try await protectedSession(client).data(for: streamed(path))
                XCTFail("\(path): a spent stream was sent again")
            } catch let error as URLError {
                XCTAssertEqual(error.code, .requestBodyStreamExhausted, path)
            }
            do {
                _ = try await client.data(for: streamed(path))
                XCTFail("\(path): HTTPDNSClient sent a spent stream again")
            } catch let error as URLError {
                XCTAssertEqual(error.code, .requestBodyStreamExhausted, path)
            }
        }

        let delegate = NewStreamDelegate(payload: payload)
        let session = try URLSession(configuration: protectedConfiguration(client), delegate: delegate, delegateQueue: nil)
        let (echo, response) = try await session.data(for: streamed("/307"))
        XCTAssertEqual((response as? HTTPURLResponse)?.value(forHTTPHeaderField: "X-Host"), "other.test:\(origin.port)")
        XCTAssertEqual(echo, payload, "the delegate's new stream was sent to the redirect target")
        XCTAssertEqual(delegate.asked, 1)
    }

    // MARK: 4. Timeouts

    func testRequestAndResourceTimeoutsApply() async throws {
        let quick = try protectedConfiguration(client)
        quick.timeoutIntervalForRequest = 1
        do {
            _ = try await URLSession(configuration: quick).data(from: url("/slow?ms=4000"))
            XCTFail("timeoutIntervalForRequest ignored")
        } catch let error as URLError {
            XCTAssertEqual(error.code, .timedOut)
        }

        var request = URLRequest(url: url("/slow?ms=4000"))
        request.timeoutInterval = 1
        do {
            _ = try await protectedSession(client).data(for: request)
            XCTFail("the request's timeoutInterval ignored")
        } catch let error as URLError {
            XCTAssertEqual(error.code, .timedOut)
        }

        // Bytes keep moving (no idle timeout), but the whole load may take 1 s only.
        let bounded = try protectedConfiguration(client)
        bounded.timeoutIntervalForResource = 1
        do {
            _ = try await URLSession(configuration: bounded).data(from: url("/drip?n=40&ms=100"))
            XCTFail("timeoutIntervalForResource ignored")
        } catch let error as URLError {
            XCTAssertEqual(error.code, .timedOut)
        }
    }

    // MARK: 5. Installations never mix

    func testTwoSessionsKeepTheirClientsCookiesAndHeaders() async throws {
        let second = try Origin(address: "127.0.0.2", respond: Self.routes)
        defer { second.stop() }
        // Same name, different truths: each session must reach the address its own client chose.
        let configurationA = URLSessionConfiguration.ephemeral
        configurationA.httpAdditionalHeaders = ["Authorization": "Bearer A"]
        try configurationA.httpdnsInstall(makeClient(["shared.test": ["127.0.0.1"]]))
        let sessionA = URLSession(configuration: configurationA)
        let configurationB = URLSessionConfiguration.ephemeral
        configurationB.httpAdditionalHeaders = ["X-Session": "B"]
        try configurationB.httpdnsInstall(makeClient(["shared.test": ["127.0.0.2"]]))
        let sessionB = URLSession(configuration: configurationB)
        XCTAssertFalse(configurationA.httpCookieStorage === configurationB.httpCookieStorage)

        let loginA = URL(string: "http://shared.test:\(origin.port)/login?who=A")!
        _ = try await sessionA.data(from: loginA)
        _ = try await sessionB.data(from: URL(string: "http://shared.test:\(second.port)/profile")!)
        _ = try await sessionA.data(from: URL(string: "http://shared.test:\(origin.port)/profile")!)

        XCTAssertEqual(origin.requests.map(\.path), ["/login", "/profile"], "session A reached A's address only")
        XCTAssertEqual(second.requests.map(\.path), ["/profile"], "session B reached B's address only")
        let b = try XCTUnwrap(second.requests.first)
        XCTAssertNil(b.header("cookie"), "A's cookie never reaches B")
        XCTAssertNil(b.header("authorization"), "A's Authorization never reaches B")
        XCTAssertEqual(b.header("x-session"), "B")
        let a = try XCTUnwrap(origin.requests.last)
        XCTAssertEqual(a.header("cookie"), "session=A")
        XCTAssertEqual(a.header("authorization"), "Bearer A")
        XCTAssertNil(a.header("x-session"), "B's header never reaches A")
        XCTAssertEqual(configurationB.httpCookieStorage?.cookies?.count ?? 0, 0, "B's storage holds no cookie of A")
    }

    // MARK: 6. Delegates: chunks as they arrive, redirects asked

    func testADelegateGetsTheBodyChunkByChunkAndDecidesRedirects() async throws {
        let delegate = DataRecorder(followRedirects: false)
        let session = try URLSession(configuration: protectedConfiguration(client), delegate: delegate, delegateQueue: nil)
        session.dataTask(with: url("/drip?n=8&ms=50")).resume()
        let drip = await delegate.finished()
        XCTAssertNil(drip.error)
        XCTAssertEqual(drip.bytes, 8 * 1024)
        XCTAssertGreaterThan(drip.chunks, 1, "the body reached the delegate in pieces")

        let refusing = DataRecorder(followRedirects: false)
        let refusingSession = try URLSession(configuration: protectedConfiguration(client), delegate: refusing, delegateQueue: nil)
        refusingSession.dataTask(with: url("/302")).resume()
        let refused = await refusing.finished()
        XCTAssertEqual(refused.redirectsAsked, 1)
        XCTAssertEqual(refused.status, 302, "a refused redirect is the response")
        XCTAssertEqual(refused.bytes, 5, "with its body")
        XCTAssertEqual(origin.requests.filter { $0.path == "/echo" }.count, 0)
    }

    // MARK: 6. A 401 challenge is answered inside the protocol

    func testA401IsAnsweredThroughTheProtocolAndNeverHangs() async throws {
        var options = ChallengeAnswerer.Answer.credential
        let answering = ChallengeAnswerer(options)
        let session = try URLSession(configuration: protectedConfiguration(client), delegate: answering, delegateQueue: nil)
        session.dataTask(with: url("/auth")).resume()
        let answered = await answering.finished()
        XCTAssertNil(answered.error)
        XCTAssertEqual(answered.status, 200)
        XCTAssertEqual(answering.challenges, 1)
        // Both requests went through the protocol (the retry too: corelibs would re-send it with its
        // own HTTP stack, resolving parity.test itself, which cannot be resolved here).
        XCTAssertEqual(origin.requests.map { $0.header("authorization") ?? "-" }, ["-", "Basic dXNlcjpwYXNzd29yZA=="])

        options = .decline
        let declining = ChallengeAnswerer(options)
        try URLSession(configuration: protectedConfiguration(client), delegate: declining, delegateQueue: nil)
            .dataTask(with: url("/auth")).resume()
        let declined = await declining.finished()
        XCTAssertEqual(declined.status, 401, "a declined challenge delivers the 401 (corelibs alone never completes)")

        let (body, response) = try await protectedSession(client).data(from: url("/auth"))
        XCTAssertEqual((response as? HTTPURLResponse)?.statusCode, 401, "no delegate: the 401 is the answer")
        XCTAssertNil((response as? HTTPURLResponse)?.value(forHTTPHeaderField: "WWW-Authenticate"))
        XCTAssertEqual(String(decoding: body, as: UTF8.self), "no")
    }
}

/// Answers (or declines) every challenge.
final class ChallengeAnswerer: TaskRecorder, @unchecked Sendable {
    enum Answer { case credential, decline }
    private let answer: Answer
    private var count = 0

    init(_ answer: Answer) {
        self.answer = answer
    }

    var challenges: Int { lock.withLock { count } }

    override func urlSession(_ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
                             completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void) {
        lock.withLock { count += 1 }
        switch answer {
        case .credential: completionHandler(.useCredential, URLCredential(user: "user", password: "password", persistence: .forSession))
        case .decline: completionHandler(.performDefaultHandling, nil)
        }
    }
}

func protectedConfiguration(_ client: HTTPDNSClient) throws -> URLSessionConfiguration {
    let configuration = URLSessionConfiguration.ephemeral
    try configuration.httpdnsInstall(client)
    return configuration
}

/// Waits for one delegate-based task and records what the delegate saw.
class TaskRecorder: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    struct Outcome: Sendable {
        var error: URLError?
        var status = 0
        var bytes = 0
        var chunks = 0
        var progressCalls = 0
        var redirectsAsked = 0
        var bytesSent: Int64 = 0
        var expectedToSend: Int64 = 0
    }

    let lock = NSLock()
    var outcome = Outcome()
    private var done = false
    private var waiter: CheckedContinuation<Outcome, Never>?
    let followRedirects: Bool

    init(followRedirects: Bool = true) {
        self.followRedirects = followRedirects
    }

    func finished() async -> Outcome {
        await withCheckedContinuation { continuation in
            let ready = lock.withLock { () -> Outcome? in
                if done { return outcome }
                waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void) {
        lock.withLock { outcome.redirectsAsked += 1 }
        completionHandler(followRedirects ? request : nil)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64,
                    totalBytesExpectedToSend: Int64) {
        lock.withLock {
            outcome.bytesSent = totalBytesSent
            outcome.expectedToSend = totalBytesExpectedToSend
        }
    }

    /// Subclasses answer challenges by overriding (a protocol method first declared in a subclass
    /// would not be the conformance's witness).
    func urlSession(_ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
                    completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void) {
        completionHandler(.performDefaultHandling, nil)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let (waiter, outcome) = lock.withLock { () -> (CheckedContinuation<Outcome, Never>?, Outcome) in
            self.outcome.error = error.map { $0 as? URLError ?? URLError(.unknown) }
            self.outcome.status = (task.response as? HTTPURLResponse)?.statusCode ?? 0
            done = true
            defer { self.waiter = nil }
            return (self.waiter, self.outcome)
        }
        waiter?.resume(returning: outcome)
    }
}

final class DataRecorder: TaskRecorder, URLSessionDataDelegate, @unchecked Sendable {
    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        lock.withLock {
            outcome.chunks += 1
            outcome.bytes += data.count
        }
    }
}

final class DownloadRecorder: TaskRecorder, URLSessionDownloadDelegate, @unchecked Sendable {
    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL) {
        let count = (try? Data(contentsOf: location))?.count ?? -1
        try? FileManager.default.removeItem(at: location)
        lock.withLock { outcome.bytes = count }
    }

    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didWriteData bytesWritten: Int64,
                    totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64) {
        lock.withLock { outcome.progressCalls += 1 }
    }
}

/// Gives a fresh copy of the body whenever the session asks.
final class NewStreamDelegate: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    private let payload: Data
    private let lock = NSLock()
    private var count = 0

    init(payload: Data) {
        self.payload = payload
    }

    var asked: Int { lock.withLock { count } }

    func urlSession(_ session: URLSession, task: URLSessionTask, needNewBodyStream completionHandler: @escaping @Sendable (InputStream?) -> Void) {
        lock.withLock { count += 1 }
        completionHandler(InputStream(data: payload))
    }
}
