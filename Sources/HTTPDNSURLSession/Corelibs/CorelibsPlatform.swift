import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What the install check inspects: swift-corelibs-foundation's own types (``corelibs``), or a
/// test's stand-ins that copy their layout with one field renamed or retyped.
///
/// The check looks each internal up by name in these types, compares its type, then reads it back
/// from the objects of a ``CorelibsProbe`` made for the purpose, with the same code a request uses.
package struct CorelibsPlatform {
    /// Declares `workQueue`, `session` and `knownBody` (`URLSessionTask`).
    package var taskClass: AnyClass
    /// Declares `taskRegistry`, whose class declares `behaviours` (`URLSession`).
    package var sessionClass: AnyClass
    /// Declares `properties` (`URLProtocol`).
    package var protocolClass: AnyClass
    /// Declares `isTimeoutIntervalSet` (`URLRequest`).
    package var requestType: Any.Type
    /// How errors name the toolchain.
    package var toolchain: String
    /// Makes the objects the check reads back; called once per check, closed after it.
    package var makeProbe: () -> CorelibsProbe

    package init(
        taskClass: AnyClass, sessionClass: AnyClass, protocolClass: AnyClass, requestType: Any.Type, toolchain: String,
        makeProbe: @escaping () -> CorelibsProbe
    ) {
        self.taskClass = taskClass
        self.sessionClass = sessionClass
        self.protocolClass = protocolClass
        self.requestType = requestType
        self.toolchain = toolchain
        self.makeProbe = makeProbe
    }

    /// This process's swift-corelibs-foundation.
    ///
    /// Its probe is a session of its own with five tasks that are never resumed (nothing is sent),
    /// cancelled and invalidated when the check ends.
    package static var corelibs: CorelibsPlatform {
        CorelibsPlatform(
            taskClass: URLSessionTask.self, sessionClass: URLSession.self, protocolClass: URLProtocol.self,
            requestType: URLRequest.self, toolchain: toolchain, makeProbe: corelibsProbe)
    }

    /// The compiler this module was built with (its Foundation is the one the toolchain ships).
    package static let toolchain: String = {
        let version: String
        #if compiler(>=6.5)
        version = "6.5 or later"
        #elseif compiler(>=6.4)
        version = "6.4"
        #elseif compiler(>=6.3.3)
        version = "6.3.3"
        #elseif compiler(>=6.3.2)
        version = "6.3.2"
        #elseif compiler(>=6.3.1)
        version = "6.3.1"
        #elseif compiler(>=6.3)
        version = "6.3"
        #else
        version = "6.2"
        #endif
        return "Swift \(version) (swift-corelibs-foundation)"
    }()

    private static func corelibsProbe() -> CorelibsProbe {
        let session = URLSession(configuration: .ephemeral)
        let url = URL(string: "http://corelibs-probe.invalid/")!
        var upload = URLRequest(url: url)
        upload.httpMethod = "POST"
        var streamed = upload
        streamed.httpBodyStream = InputStream(data: Data("stream".utf8))
        let bytes = Data("probe".utf8)
        let file = URL(fileURLWithPath: "/dev/null")
        let tasks: [(URLSessionTask, CorelibsProbe.Body, CorelibsReporting)] = [
            (session.dataTask(with: url), .none, .delegate),
            (session.uploadTask(with: upload, from: bytes) { _, _, _ in }, .data(bytes), .dataCompletion),
            (session.downloadTask(with: url) { _, _, _ in }, .none, .downloadCompletion),
            (session.uploadTask(with: upload, fromFile: file), .file(file), .delegate),
            (session.dataTask(with: streamed), .stream, .delegate),
        ]
        var timed = URLRequest(url: url)
        timed.timeoutInterval = 5
        return CorelibsProbe(
            session: session,
            tasks: tasks.map { CorelibsProbe.Task(object: $0.0, identifier: $0.0.taskIdentifier, body: $0.1, reporting: $0.2) },
            requestWithoutTimeout: URLRequest(url: url, timeoutInterval: 5), requestWithTimeout: timed,
            close: { session.invalidateAndCancel() })
    }
}
