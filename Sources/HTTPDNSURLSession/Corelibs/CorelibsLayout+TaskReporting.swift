import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How a task reports its result, as its session registered it.
package enum CorelibsReporting: Sendable, Equatable {
    /// Through the session's delegate (`callDelegate`): chunks go to it as they arrive.
    case delegate
    /// Through a completion handler for data (the async `data(for:)` included).
    case dataCompletion
    /// Through a completion handler for a download.
    case downloadCompletion
}

/// Workaround: a custom protocol cannot see how its task reports.
///
/// Observed: a task with a completion handler gets only the LAST `didLoad` chunk from
/// swift-corelibs-foundation, a delegate gets each; which one a task has is kept in the session's
/// internal task registry (`URLSession.taskRegistry.behaviours`, `[Int: _Behaviour]` keyed by
/// `taskIdentifier`), and decides whether the protocol must keep the whole body for the completion.
/// The registry is found at its offset in the session, the dictionary at its offset in the registry
/// and opened by its (internal) value type; the one entry is then decoded by its case name, which
/// the check proves on a probe task of each kind.
extension CorelibsLayout {
    /// Where the behaviours live, and their dictionary type opened.
    struct RegistryAccess: @unchecked Sendable {  // offsets and a metatype: immutable
        let registry: CorelibsField
        let behaviours: CorelibsField
        fileprivate let table: any BehaviourTable.Type
    }

    static func findRegistry(in platform: CorelibsPlatform) throws(HTTPDNSURLSessionError) -> RegistryAccess {
        let registry = try require(.taskRegistry, in: platform.sessionClass, platform)
        guard let registryClass = registry.type as? AnyClass else {
            throw refusal(.taskRegistry, "has the type \(String(reflecting: registry.type)), not a class", platform.toolchain)
        }
        let behaviours = try require(.behaviours, in: registryClass, platform)
        guard let table = behaviours.type as? any BehaviourTable.Type else {
            throw refusal(.behaviours, "has the type \(String(reflecting: behaviours.type)), not an [Int: behaviour]", platform.toolchain)
        }
        return RegistryAccess(registry: registry, behaviours: behaviours, table: table)
    }

    /// How `task` reports, and the per-task delegate of the async API (`data(for:delegate:)`).
    ///
    /// Must run on the task's work queue (the registry is mutated on the session's queue, which the
    /// task's queue targets).
    ///
    /// - Throws: ``HTTPDNSURLSessionError/Code/unexpectedPlatformState`` when the task is not
    ///   registered (it already finished) or reports in a way this route does not know.
    func reporting(of task: URLSessionTask, in session: URLSession) throws(HTTPDNSURLSessionError) -> (CorelibsReporting, URLSessionTaskDelegate?) {
        try reporting(ofTask: task.taskIdentifier, in: session)
    }

    private func reporting(ofTask identifier: Int, in session: AnyObject) throws(HTTPDNSURLSessionError) -> (CorelibsReporting, URLSessionTaskDelegate?) {
        let registryObject = registry.registry.value(in: session) as AnyObject
        let found = withExtendedLifetime(registryObject) {
            registry.table.behaviour(forKey: identifier, at: registry.behaviours.address(in: registryObject))
        }
        guard let behaviour = found else {
            throw unexpected(.behaviours, "has no entry for task \(identifier) (it already finished)")
        }
        let cases = Mirror(reflecting: behaviour)
        let payload = cases.children.first
        let name = payload?.label ?? String(describing: behaviour)
        guard cases.displayStyle == .enum else {
            throw unexpected(.behaviours, "holds a \(type(of: behaviour)), not an enum")
        }
        // The `…WithTaskDelegate` cases carry (completion handler, delegate?).
        let delegate = payload.flatMap { Mirror(reflecting: $0.value).children.first { $0.label == ".1" }?.value } as? URLSessionTaskDelegate
        switch name {
        case "callDelegate": return (.delegate, nil)
        case "dataCompletionHandler", "dataCompletionHandlerWithTaskDelegate": return (.dataCompletion, delegate)
        case "downloadCompletionHandler", "downloadCompletionHandlerWithTaskDelegate": return (.downloadCompletion, delegate)
        default: throw unexpected(.behaviours, "has the unknown case \(name)")
        }
    }

    func verifyReporting(_ probe: CorelibsProbe, _ platform: CorelibsPlatform) throws(HTTPDNSURLSessionError) {
        try Self.requireInstance(probe.session, of: platform.sessionClass, for: .taskRegistry, platform)
        guard let registryClass = registry.registry.type as? AnyClass else { return }
        try Self.requireInstance(registry.registry.value(in: probe.session) as AnyObject, of: registryClass, for: .behaviours, platform)
        for task in probe.tasks {
            try Self.requireInstance(task.object, of: platform.taskClass, for: .workQueue, platform)
            // Tasks are registered asynchronously on the session's queue; read after that, there.
            let found = workQueue(of: task.object).sync { Result { () throws(HTTPDNSURLSessionError) in try reporting(ofTask: task.identifier, in: probe.session) } }
            switch found {
            case .success((let reporting, _)) where reporting == task.reporting:
                continue
            case .success((let reporting, _)):
                throw Self.refusal(.behaviours, "reads \(reporting) for a task made to report by \(task.reporting)", toolchain)
            case .failure(let error):
                throw error.refusingInstall()
            }
        }
    }
}

/// The dictionary type of `_TaskRegistry.behaviours`, opened without naming its internal value type.
private protocol BehaviourTable {
    static func behaviour(forKey key: Int, at address: UnsafeMutableRawPointer) -> Any?
}

extension Dictionary: BehaviourTable where Key == Int {
    fileprivate static func behaviour(forKey key: Int, at address: UnsafeMutableRawPointer) -> Any? {
        address.assumingMemoryBound(to: Self.self).pointee[key].map { $0 as Any }
    }
}
