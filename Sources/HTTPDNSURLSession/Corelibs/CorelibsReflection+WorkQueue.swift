import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Workaround: `URLProtocolClient` calls must run on the task's internal `workQueue`.
///
/// Observed: swift-corelibs-foundation documents "All operations must run on this queue" on
/// `URLSessionTask.workQueue`; the client calls read the session's task registry, which that
/// queue mutates, and 16 concurrent tasks calling from the transport's thread crashed the session.
/// The queue is internal, so it is read by reflection once per request.
extension CorelibsReflection {
    /// The internal `workQueue` of `task`; nil (and a debug assertion) when not found.
    static func workQueue(of task: URLSessionTask) -> DispatchQueue? {
        guard let queue = child("workQueue", of: task) as? DispatchQueue else {
            platformChanged("URLSessionTask.workQueue not found")
            return nil
        }
        return queue
    }
}
