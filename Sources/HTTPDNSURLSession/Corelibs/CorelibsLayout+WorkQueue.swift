import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Workaround: `URLProtocolClient` calls must run on the task's internal `workQueue`.
///
/// Observed: swift-corelibs-foundation documents "All operations must run on this queue" on
/// `URLSessionTask.workQueue`; the client calls read the session's task registry, which that
/// queue mutates, and 16 concurrent tasks calling from the transport's thread crashed the session.
/// The queue is internal (a `let` of type `DispatchQueue`), so it is read at its field offset.
extension CorelibsLayout {
    static func findWorkQueue(in platform: CorelibsPlatform) throws(HTTPDNSURLSessionError) -> CorelibsField {
        try require(.workQueue, in: platform.taskClass, expected: DispatchQueue.self, platform)
    }

    /// The internal `workQueue` of `task` (an instance of the checked task class).
    func workQueue(of task: AnyObject) -> DispatchQueue {
        workQueueField.load(DispatchQueue.self, in: task)
    }
}
