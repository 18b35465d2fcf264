import Foundation
import HTTPDNSURLSession
import XCTest
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The install check refuses, by name, a platform where one corelibs internal is missing or retyped
/// (house style, rule 16), and nothing is installed or sent then.
///
/// Only `package` API is used (no `@testable`), so these also run from a release build:
/// `swift build -c release --build-tests` then `swift test -c release --skip-build --filter CorelibsInstallCheckTests`.
final class CorelibsInstallCheckTests: XCTestCase {
    private typealias Session = StandInSession<StandInRegistry>

    func testStandInsLaidOutLikeCorelibsPassTheCheck() throws {
        let configuration = URLSessionConfiguration.ephemeral
        let client = makeClient(["standin.test": ["127.0.0.1"]])
        try HTTPDNSURLProtocol.install(client, into: configuration, checking: standInPlatform(task: StandInGoodTask.self, session: Session.self))
        XCTAssertTrue(HTTPDNSURLProtocol.client(for: configuration) === client)
        XCTAssertTrue(configuration.protocolClasses?.first == HTTPDNSURLProtocol.self)
    }

    func testEachMissingInternalRefusesTheInstallation() async throws {
        let cases: [(String, CorelibsPlatform)] = [
            ("URLSessionTask.workQueue", standInPlatform(task: TaskWithRenamedWorkQueue.self, session: Session.self)),
            ("URLSessionTask.session", standInPlatform(task: TaskWithRenamedSession.self, session: Session.self)),
            ("URLSessionTask.knownBody", standInPlatform(task: TaskWithRenamedKnownBody.self, session: Session.self)),
            ("URLProtocol.properties", standInPlatform(task: StandInGoodTask.self, session: Session.self, protocolClass: ProtocolWithRenamedProperties.self)),
            ("URLRequest.isTimeoutIntervalSet", standInPlatform(
                task: StandInGoodTask.self, session: Session.self, request: RequestWithRenamedFlag.self,
                makeRequest: { RequestWithRenamedFlag(timeoutIntervalWasSet: $0) })),
            ("URLSession.taskRegistry", standInPlatform(task: StandInGoodTask.self, session: SessionWithRenamedRegistry.self)),
            ("URLSession._TaskRegistry.behaviours", standInPlatform(
                task: StandInGoodTask.self, session: StandInSession<RegistryWithRenamedBehaviours>.self)),
        ]
        for (name, platform) in cases {
            try await assertRefused(platform, naming: name, because: "was not found")
        }
    }

    func testEachRetypedInternalRefusesTheInstallation() async throws {
        let cases: [(String, String, CorelibsPlatform)] = [
            ("URLSessionTask.workQueue", "has the type", standInPlatform(task: TaskWithOperationQueue.self, session: Session.self)),
            ("URLSessionTask.session", "does not read back", standInPlatform(task: TaskWithSessionIdentifier.self, session: Session.self)),
            // `data` renamed: the body an upload would have sent empty.
            ("URLSessionTask.knownBody", "unknown case bytes", standInPlatform(task: TaskWithRenamedBodyCase.self, session: Session.self)),
            ("URLProtocol.properties", "no key temporaryFileURL", standInPlatform(
                task: StandInGoodTask.self, session: Session.self, protocolClass: ProtocolWithoutTheFileKey.self)),
            ("URLRequest.isTimeoutIntervalSet", "has the type", standInPlatform(
                task: StandInGoodTask.self, session: Session.self, request: RequestWithCountedFlag.self,
                makeRequest: { RequestWithCountedFlag(isTimeoutIntervalSet: $0 ? 1 : 0) })),
            ("URLSession._TaskRegistry.behaviours", "has the type", standInPlatform(
                task: StandInGoodTask.self, session: StandInSession<RegistryKeyedByName>.self)),
        ]
        for (name, detail, platform) in cases {
            try await assertRefused(platform, naming: name, because: detail)
        }
    }

    func testTheRefusalIsAFullSentenceNamingTheInternalAndToolchain() {
        let configuration = URLSessionConfiguration.ephemeral
        let platform = standInPlatform(task: TaskWithRenamedWorkQueue.self, session: Session.self)
        XCTAssertThrowsError(try HTTPDNSURLProtocol.install(makeClient([:]), into: configuration, checking: platform)) { error in
            XCTAssertEqual(
                "\(error)",
                "The URL protocol route cannot be installed on Swift 6.3.1 (stand-ins): the internal URLSessionTask.workQueue was not found.")
            XCTAssertEqual(error.localizedDescription, "\(error)")
        }
    }

    /// Installs with `platform`, expecting a refusal naming `internalName`; then checks that the
    /// configuration was left alone and that a session made from it anyway sends nothing.
    private func assertRefused(
        _ platform: CorelibsPlatform, naming internalName: String, because detail: String, line: UInt = #line
    ) async throws {
        let origin = try Origin(address: "127.0.0.1")
        defer { origin.stop() }
        let client = makeClient(["refused.test": ["127.0.0.1"]])
        let configuration = URLSessionConfiguration.ephemeral
        configuration.protocolClasses = [OfflineProtocol.self]
        XCTAssertThrowsError(try HTTPDNSURLProtocol.install(client, into: configuration, checking: platform), internalName, line: line) { error in
            guard let error = error as? HTTPDNSURLSessionError else {
                return XCTFail("\(internalName): \(type(of: error)) \(error)", line: line)
            }
            XCTAssertEqual(error.code, .unsupportedPlatform, line: line)
            XCTAssertEqual(error.internalName, internalName, "\(error)", line: line)
            XCTAssertEqual(error.toolchain, "Swift 6.3.1 (stand-ins)", line: line)
            XCTAssertTrue(error.detail.contains(detail), "\(error)", line: line)
            XCTAssertTrue(error.description.contains(internalName), line: line)
        }
        XCTAssertNil(HTTPDNSURLProtocol.client(for: configuration), internalName, line: line)
        XCTAssertEqual(configuration.protocolClasses?.count, 1, internalName, line: line)
        XCTAssertTrue(configuration.protocolClasses?.first == OfflineProtocol.self, internalName, line: line)

        var request = URLRequest(url: URL(string: "http://refused.test:\(origin.port)/upload")!)
        request.httpMethod = "POST"
        let session = URLSession(configuration: configuration)
        defer { session.finishTasksAndInvalidate() }
        do {
            _ = try await session.upload(for: request, from: Data("a body that must not go out empty".utf8))
            XCTFail("\(internalName): the request went somewhere", line: line)
        } catch let error as URLError {
            XCTAssertEqual(error.code, .notConnectedToInternet, internalName, line: line)
        }
        XCTAssertTrue(origin.requests.isEmpty, "\(internalName): the origin saw \(origin.requests.count) request(s)", line: line)
    }
}
