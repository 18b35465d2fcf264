import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Workaround: a custom protocol cannot see the session it serves.
///
/// Observed: `URLSessionTask.session` is internal in swift-corelibs-foundation, so a protocol had
/// to keep its settings process-wide, and a second installation re-pointed every earlier session
/// at the newest client, cookie storage and headers (issue 8, item 5). The session's own
/// `configuration` (public) carries the installation instead. The field's type is internal
/// (`URLSessionProtocol!`), so it is read as its own type and cast; the check proves that every
/// probe task reads back as the probe's session.
extension CorelibsLayout {
    /// The session that owns `task`; nil once the task has finished (corelibs clears the field).
    func session(of task: URLSessionTask) -> URLSession? {
        sessionField.value(in: task) as? URLSession
    }

    func verifySession(_ probe: CorelibsProbe, _ platform: CorelibsPlatform) throws(HTTPDNSURLSessionError) {
        for task in probe.tasks {
            try Self.requireInstance(task.object, of: platform.taskClass, for: .session, platform)
            let value = sessionField.value(in: task.object)
            guard (value as AnyObject) === probe.session else {
                throw Self.refusal(.session, "does not read back as the task's session (found \(type(of: value)))", toolchain)
            }
        }
    }
}
