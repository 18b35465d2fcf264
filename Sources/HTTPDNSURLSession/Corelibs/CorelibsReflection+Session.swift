import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Workaround: a custom protocol cannot see the session it serves, nor how the task reports.
///
/// Observed: `URLSessionTask.session` is internal in swift-corelibs-foundation, so a protocol had
/// to keep its settings process-wide, and a second installation re-pointed every earlier session
/// at the newest client, cookie storage and headers (issue 8, item 5). The session's own
/// `configuration` (public) carries the installation instead. How a task reports (a completion
/// handler, which gets only the LAST `didLoad` chunk, or a delegate) is in the session's internal
/// task registry; it decides whether the protocol must keep the whole body for the completion.
extension CorelibsReflection {
    /// The session that owns `task`; nil (and a debug assertion) when not found.
    static func session(of task: URLSessionTask) -> URLSession? {
        guard let value = child("session", of: task) else {
            platformChanged("URLSessionTask.session not found")
            return nil
        }
        return value as? URLSession
    }

    /// How a task reports its result, as registered in its session.
    enum Reporting: Equatable {
        /// Through the session's delegate (`callDelegate`): chunks go to it as they arrive.
        case delegate
        /// Through a completion handler for data (the async `data(for:)` included).
        case dataCompletion
        /// Through a completion handler for a download.
        case downloadCompletion
        /// Not found in the registry (the task already finished), or an unknown case.
        case unknown
    }

    /// The reporting of `task` and the per-task delegate of the async API (`data(for:delegate:)`).
    ///
    /// Must run on the task's work queue (the registry is mutated on the session's queue, which the
    /// task's queue targets).
    static func reporting(of task: URLSessionTask, in session: URLSession) -> (Reporting, URLSessionTaskDelegate?) {
        guard let registry = child("taskRegistry", of: session), let behaviours = child("behaviours", of: registry) else {
            platformChanged("URLSession.taskRegistry.behaviours not found")
            return (.unknown, nil)
        }
        for entry in Mirror(reflecting: behaviours).children {
            guard let key = child("key", of: entry.value) as? Int, key == task.taskIdentifier,
                  let behaviour = child("value", of: entry.value)
            else { continue }
            let name = Mirror(reflecting: behaviour).children.first?.label ?? String(describing: behaviour)
            let payload = Mirror(reflecting: behaviour).children.first?.value
            let delegate = payload.flatMap { child(".1", of: $0) }.flatMap { $0 as? URLSessionTaskDelegate }
            switch name {
            case "callDelegate": return (.delegate, nil)
            case "dataCompletionHandler", "dataCompletionHandlerWithTaskDelegate": return (.dataCompletion, delegate)
            case "downloadCompletionHandler", "downloadCompletionHandlerWithTaskDelegate": return (.downloadCompletion, delegate)
            default:
                platformChanged("unknown task behaviour \(name)")
                return (.unknown, nil)
            }
        }
        return (.unknown, nil)
    }
}
