import Foundation
import HTTPDNSURLSession
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// Stand-ins for the swift-corelibs-foundation types the install check inspects, laid out like them
// (the field names and types of Swift 6.3), and variants with one internal renamed or retyped: what
// a future toolchain could ship. `standInPlatform` builds a platform description from them.

/// `URLSessionProtocol` (internal): what `URLSessionTask.session` holds.
protocol StandInSessionProtocol: AnyObject {
    init()
    func register(_ identifier: Int, _ behaviour: StandInBehaviour)
}

/// `URLSessionTask._Body`.
enum StandInBody {
    case none
    case data(DispatchData)
    case file(URL)
    case stream(InputStream)
}

/// `_Body` with `data` renamed: an upload read through the old name would go out empty.
enum StandInRenamedBody {
    case none
    case bytes(DispatchData)
    case file(URL)
    case stream(InputStream)

    init?(_ body: StandInBody?) {
        switch body {
        case nil: return nil
        case .none?: self = .none
        case .data(let data)?: self = .bytes(data)
        case .file(let url)?: self = .file(url)
        case .stream(let stream)?: self = .stream(stream)
        }
    }
}

/// `URLSession._TaskRegistry._Behaviour`.
enum StandInBehaviour {
    case callDelegate
    case dataCompletionHandler(@Sendable (Data?, URLResponse?, Error?) -> Void)
    case downloadCompletionHandler(@Sendable (URL?, URLResponse?, Error?) -> Void)
}

/// `URLSession._TaskRegistry` and its variants.
protocol StandInRegistryType: AnyObject {
    init()
    func register(_ identifier: Int, _ behaviour: StandInBehaviour)
}

final class StandInRegistry: StandInRegistryType {
    var tasks: [Int: AnyObject] = [:]
    var behaviours: [Int: StandInBehaviour] = [:]
    func register(_ identifier: Int, _ behaviour: StandInBehaviour) { behaviours[identifier] = behaviour }
}

final class RegistryWithRenamedBehaviours: StandInRegistryType {
    var tasks: [Int: AnyObject] = [:]
    var taskBehaviours: [Int: StandInBehaviour] = [:]
    func register(_ identifier: Int, _ behaviour: StandInBehaviour) { taskBehaviours[identifier] = behaviour }
}

final class RegistryKeyedByName: StandInRegistryType {
    var behaviours: [String: StandInBehaviour] = [:]
    func register(_ identifier: Int, _ behaviour: StandInBehaviour) { behaviours[String(identifier)] = behaviour }
}

/// `URLSession`.
final class StandInSession<Registry: StandInRegistryType>: StandInSessionProtocol {
    var nextTaskIdentifier = 1
    let taskRegistry = Registry()
    func register(_ identifier: Int, _ behaviour: StandInBehaviour) { taskRegistry.register(identifier, behaviour) }
}

final class SessionWithRenamedRegistry: StandInSessionProtocol {
    let registry = StandInRegistry()
    func register(_ identifier: Int, _ behaviour: StandInBehaviour) { registry.register(identifier, behaviour) }
}

/// `URLSessionTask` and its variants.
protocol StandInTask: AnyObject {
    init(session: StandInSessionProtocol, body: StandInBody?, queue: DispatchQueue)
}

final class StandInGoodTask: StandInTask {
    var countOfBytesClientExpectsToReceive: Int64 = -1
    var session: StandInSessionProtocol!
    var knownBody: StandInBody?
    let workQueue: DispatchQueue

    init(session: StandInSessionProtocol, body: StandInBody?, queue: DispatchQueue) {
        (self.session, knownBody, workQueue) = (session, body, queue)
    }
}

final class TaskWithRenamedWorkQueue: StandInTask {
    var session: StandInSessionProtocol!
    var knownBody: StandInBody?
    let queue: DispatchQueue

    init(session: StandInSessionProtocol, body: StandInBody?, queue: DispatchQueue) {
        (self.session, knownBody, self.queue) = (session, body, queue)
    }
}

final class TaskWithOperationQueue: StandInTask {
    var session: StandInSessionProtocol!
    var knownBody: StandInBody?
    let workQueue = OperationQueue()

    init(session: StandInSessionProtocol, body: StandInBody?, queue: DispatchQueue) {
        (self.session, knownBody) = (session, body)
    }
}

final class TaskWithRenamedSession: StandInTask {
    weak var owner: StandInSessionProtocol?
    var knownBody: StandInBody?
    let workQueue: DispatchQueue

    init(session: StandInSessionProtocol, body: StandInBody?, queue: DispatchQueue) {
        (owner, knownBody, workQueue) = (session, body, queue)
    }
}

final class TaskWithSessionIdentifier: StandInTask {
    var session: Int?
    var knownBody: StandInBody?
    let workQueue: DispatchQueue

    init(session: StandInSessionProtocol, body: StandInBody?, queue: DispatchQueue) {
        (self.session, knownBody, workQueue) = (ObjectIdentifier(session).hashValue, body, queue)
    }
}

final class TaskWithRenamedKnownBody: StandInTask {
    var session: StandInSessionProtocol!
    var body: StandInBody?
    let workQueue: DispatchQueue

    init(session: StandInSessionProtocol, body: StandInBody?, queue: DispatchQueue) {
        (self.session, self.body, workQueue) = (session, body, queue)
    }
}

final class TaskWithRenamedBodyCase: StandInTask {
    var session: StandInSessionProtocol!
    var knownBody: StandInRenamedBody?
    let workQueue: DispatchQueue

    init(session: StandInSessionProtocol, body: StandInBody?, queue: DispatchQueue) {
        (self.session, knownBody, workQueue) = (session, StandInRenamedBody(body), queue)
    }
}

/// `URLProtocol._PropertyKey`, and one without `temporaryFileURL`.
enum StandInPropertyKey: String {
    case responseData
    case temporaryFileURL
}

enum OlderPropertyKey: String {
    case responseData
}

/// `URLProtocol` and its variants.
final class StandInProtocol {
    var properties: [StandInPropertyKey: Any] = [:]
}

final class ProtocolWithRenamedProperties {
    var propertyTable: [StandInPropertyKey: Any] = [:]
}

final class ProtocolWithoutTheFileKey {
    var properties: [OlderPropertyKey: Any] = [:]
}

/// `URLRequest` and its variants.
struct StandInRequest {
    var handle: AnyObject? = nil
    var isTimeoutIntervalSet: Bool
}

struct RequestWithRenamedFlag {
    var handle: AnyObject? = nil
    var timeoutIntervalWasSet: Bool
}

struct RequestWithCountedFlag {
    var handle: AnyObject? = nil
    var isTimeoutIntervalSet: Int
}

/// A platform description made of stand-ins; each argument swaps one part for a variant.
func standInPlatform<Task: StandInTask, Session: StandInSessionProtocol>(
    task: Task.Type, session: Session.Type, protocolClass: AnyClass = StandInProtocol.self,
    request: Any.Type = StandInRequest.self, makeRequest: @escaping (Bool) -> Any = { StandInRequest(isTimeoutIntervalSet: $0) }
) -> CorelibsPlatform {
    CorelibsPlatform(
        taskClass: Task.self, sessionClass: Session.self, protocolClass: protocolClass, requestType: request,
        toolchain: "Swift 6.3.1 (stand-ins)"
    ) {
        let session = Session()
        let queue = DispatchQueue(label: "stand-in task work queue")
        let bytes = Data("probe".utf8)
        let file = URL(fileURLWithPath: "/dev/null")
        let shapes: [(StandInBody?, CorelibsProbe.Body, StandInBehaviour, CorelibsReporting)] = [
            (StandInBody.none, .none, .callDelegate, .delegate),
            (.data(bytes.withUnsafeBytes { DispatchData(bytes: $0) }), .data(bytes), .dataCompletionHandler { _, _, _ in }, .dataCompletion),
            (StandInBody.none, .none, .downloadCompletionHandler { _, _, _ in }, .downloadCompletion),
            (.file(file), .file(file), .callDelegate, .delegate),
            (.stream(InputStream(data: bytes)), .stream, .callDelegate, .delegate),
        ]
        var tasks: [CorelibsProbe.Task] = []
        for (index, shape) in shapes.enumerated() {
            let task = Task(session: session, body: shape.0, queue: queue)
            session.register(index + 1, shape.2)
            tasks.append(CorelibsProbe.Task(object: task, identifier: index + 1, body: shape.1, reporting: shape.3))
        }
        return CorelibsProbe(
            session: session, tasks: tasks, requestWithoutTimeout: makeRequest(false), requestWithTimeout: makeRequest(true),
            close: {})
    }
}

/// Fails every request without sending it: a session without the HTTPDNS protocol then reaches
/// neither the system resolver nor the network.
final class OfflineProtocol: URLProtocol {
    override class func canInit(with request: URLRequest) -> Bool { true }
    override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }
    override func startLoading() {
        client?.urlProtocol(self, didFailWithError: URLError(.notConnectedToInternet))
    }
    override func stopLoading() {}
}
