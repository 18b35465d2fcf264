import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a scenario gets: the servers, and the route's way of making sessions.
public struct DifferentialContext: Sendable {
    public let bed: DifferentialBed
    public let route: any DifferentialRoute

    public init(bed: DifferentialBed, route: any DifferentialRoute) {
        self.bed = bed
        self.route = route
    }

    /// A new session of the route (its own configuration, cookie storage and installation).
    public func session(
        delegate: (any URLSessionDelegate)? = nil, configure: (URLSessionConfiguration) -> Void = { _ in }
    ) -> URLSession {
        let configuration = route.makeConfiguration()
        configure(configuration)
        return URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
    }

    public func url(_ path: String, other: Bool = false, plain: Bool = false) -> URL {
        bed.url(path, other: other, plain: plain)
    }
}

/// One use of `URLSession` an app might make, observed the same way on every route.
public struct DifferentialScenario: Sendable {
    public let name: String
    public let run: @Sendable (DifferentialContext) async throws -> DifferentialResult

    public init(_ name: String, run: @escaping @Sendable (DifferentialContext) async throws -> DifferentialResult) {
        self.name = name
        self.run = run
    }
}

/// Every scenario, in the order they run.
public enum DifferentialScenarios {
    public static let all: [DifferentialScenario] = basics + uploads + downloads + redirects + sessions + timing

    public static func named(_ name: String) -> DifferentialScenario? {
        all.first { $0.name == name }
    }
}

/// `URLSession`'s completion-handler APIs as async calls that never throw (the error is recorded).
extension URLSession {
    func dataTaskResult(_ request: URLRequest) async -> (Data?, URLResponse?, (any Error)?) {
        let box: ResultBox<(Data?, URLResponse?, (any Error)?)> = await withCheckedContinuation { continuation in
            dataTask(with: request) { data, response, error in
                continuation.resume(returning: ResultBox((data, response, error)))
            }.resume()
        }
        return box.value
    }

    func uploadTaskResult(_ request: URLRequest, from data: Data) async -> (Data?, URLResponse?, (any Error)?) {
        let box: ResultBox<(Data?, URLResponse?, (any Error)?)> = await withCheckedContinuation { continuation in
            uploadTask(with: request, from: data) { data, response, error in
                continuation.resume(returning: ResultBox((data, response, error)))
            }.resume()
        }
        return box.value
    }

    /// A download with a completion handler; the file is read inside the handler (it is the app's
    /// to move there).
    func downloadTaskResult(_ url: URL) async -> (Data?, URLResponse?, (any Error)?) {
        let box: ResultBox<(Data?, URLResponse?, (any Error)?)> = await withCheckedContinuation { continuation in
            downloadTask(with: url) { location, response, error in
                let data = location.flatMap { try? Data(contentsOf: $0) }
                if let location { try? FileManager.default.removeItem(at: location) }
                continuation.resume(returning: ResultBox((error == nil ? data ?? Data("<no file>".utf8) : nil, response, error)))
            }.resume()
        }
        return box.value
    }
}

/// Carries a value through a continuation whose single hand-over makes it safe.
struct ResultBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
