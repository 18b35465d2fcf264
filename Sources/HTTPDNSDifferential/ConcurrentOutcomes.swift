import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The outcomes of many tasks run at once, summed up as facts a test can bound exactly: how many
/// answered 200, every distinct body among them, and every distinct failure with libcurl's own
/// message.
public struct ConcurrentOutcomes: Sendable {
    /// One task's outcome: `200 <body SHA-256>`, `HTTP <status>` for any other status, or
    /// `<URLError code> <message>` for a failure.
    public struct Outcome: Sendable, Equatable {
        public var text: String

        public init(data: Data?, response: URLResponse?, error: (any Error)?) {
            if let error {
                text = "\((error as? URLError)?.code.rawValue ?? -1) \(ConcurrentOutcomes.message(of: error))"
            } else if let status = (response as? HTTPURLResponse)?.statusCode, status == 200 {
                text = "200 \(DifferentialHash.sha256(data ?? Data()))"
            } else {
                text = "HTTP \((response as? HTTPURLResponse)?.statusCode ?? 0)"
            }
        }

        public var succeeded: Bool { text.hasPrefix("200 ") }
    }

    public let outcomes: [Outcome]

    public init(_ outcomes: [Outcome]) {
        self.outcomes = outcomes
    }

    /// Corelibs puts libcurl's error buffer (or, when it is empty, `curl_easy_strerror`) in the
    /// error's `NSLocalizedDescriptionKey` (`_MultiHandle.completedTransfer`): the one place an app
    /// can tell apart the libcurl errors corelibs maps to `URLError.unknown`.
    public static func message(of error: any Error) -> String {
        ((error as NSError).userInfo[NSLocalizedDescriptionKey] as? String) ?? "-"
    }

    /// `PREFIX.ok` (tasks answered 200), `PREFIX.bodies` (their distinct body hashes, sorted),
    /// `PREFIX.failed` (the others) and `PREFIX.failures` (their distinct outcomes, sorted, joined
    /// by ` | `).
    public func facts(prefix: String) -> [String: String] {
        let succeeded = outcomes.filter(\.succeeded)
        let failed = outcomes.filter { !$0.succeeded }
        return [
            "\(prefix).ok": String(succeeded.count),
            "\(prefix).bodies": Set(succeeded.map { String($0.text.dropFirst(4)) }).sorted().joined(separator: ","),
            "\(prefix).failed": String(failed.count),
            "\(prefix).failures": Set(failed.map(\.text)).sorted().joined(separator: " | "),
        ]
    }
}
