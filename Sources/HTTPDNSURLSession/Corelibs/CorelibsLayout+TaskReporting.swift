@_spi(Reflection) import Swift
import Foundation
import HTTPDNSCore
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
/// and opened by its (internal) value type. The entry's case is read through its type's enum value
/// witnesses (``CorelibsEnumWitnesses``); what each case means is learned once, from a `Mirror` of
/// the first value holding it, by its name (the check learns three on probe tasks, a request the
/// async API's `…WithTaskDelegate` cases), and the per-task delegate is read from the payload at the
/// offset learned with it.
extension CorelibsLayout {
    /// Where the behaviours live, their dictionary type opened, and what each case means.
    struct RegistryAccess: @unchecked Sendable {  // offsets, metatypes and a locked table
        let registry: CorelibsField
        let behaviours: CorelibsField
        fileprivate let table: any BehaviourTable.Type
        let witnesses: CorelibsEnumWitnesses
        let cases = BehaviourCases()
    }

    /// What one case of `_Behaviour` means, learned from the first value holding it.
    struct BehaviourCase: Sendable {
        var reporting: CorelibsReporting
        /// Where the `URLSessionTaskDelegate?` sits in the payload (the `…WithTaskDelegate` cases).
        var delegateOffset: Int?
    }

    /// The cases learned so far, by tag.
    final class BehaviourCases: Sendable {
        private let learned = HTTPDNSLock<[UInt32: BehaviourCase]>([:])

        func known(_ tag: UInt32) -> BehaviourCase? { learned.withLock { $0[tag] } }
        func remember(_ meaning: BehaviourCase, for tag: UInt32) { learned.withLock { $0[tag] = meaning } }
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
        guard let witnesses = CorelibsEnumWitnesses(of: table.valueType) else {
            throw refusal(.behaviours, "holds \(String(reflecting: table.valueType)), not an enum", platform.toolchain)
        }
        return RegistryAccess(registry: registry, behaviours: behaviours, table: table, witnesses: witnesses)
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
            registry.table.withBehaviour(forKey: identifier, at: registry.behaviours.address(in: registryObject)) { value, boxed in
                Result { () throws(HTTPDNSURLSessionError) in try decodeBehaviour(value, boxed) }
            }
        }
        guard let found else {
            throw unexpected(.behaviours, "has no entry for task \(identifier) (it already finished)")
        }
        return try found.get()
    }

    /// The meaning of the behaviour at `value` (a copy, of the registry's value type).
    private func decodeBehaviour(
        _ value: UnsafeMutableRawPointer, _ boxed: () -> Any
    ) throws(HTTPDNSURLSessionError) -> (CorelibsReporting, URLSessionTaskDelegate?) {
        let tag = registry.witnesses.tag(of: value)
        if let known = registry.cases.known(tag) {
            return (known.reporting, known.delegateOffset.flatMap { delegate(in: value, tag: tag, at: $0) })
        }
        let (meaning, mirrored) = try learnBehaviour(boxed())
        let read = meaning.delegateOffset.flatMap { delegate(in: value, tag: tag, at: $0) }
        guard read === mirrored else {
            throw unexpected(.behaviours, "gives another delegate through its value witnesses than through a Mirror")
        }
        registry.cases.remember(meaning, for: tag)
        return (meaning.reporting, read)
    }

    private func delegate(in value: UnsafeMutableRawPointer, tag: UInt32, at offset: Int) -> URLSessionTaskDelegate? {
        registry.witnesses.withPayload(of: value, tag: tag) { payload in
            payload.load(fromByteOffset: offset, as: URLSessionTaskDelegate?.self)
        }
    }

    /// What a case means, from a `Mirror` of a value holding it (once per case), and its delegate.
    private func learnBehaviour(_ behaviour: Any) throws(HTTPDNSURLSessionError) -> (BehaviourCase, URLSessionTaskDelegate?) {
        let cases = Mirror(reflecting: behaviour)
        guard cases.displayStyle == .enum else {
            throw unexpected(.behaviours, "holds a \(type(of: behaviour)), not an enum")
        }
        let payload = cases.children.first
        let name = payload?.label ?? String(describing: behaviour)
        let reporting: CorelibsReporting
        switch name {
        case "callDelegate": return (BehaviourCase(reporting: .delegate), nil)
        case "dataCompletionHandler": return (BehaviourCase(reporting: .dataCompletion), nil)
        case "downloadCompletionHandler": return (BehaviourCase(reporting: .downloadCompletion), nil)
        case "dataCompletionHandlerWithTaskDelegate": reporting = .dataCompletion
        case "downloadCompletionHandlerWithTaskDelegate": reporting = .downloadCompletion
        default: throw unexpected(.behaviours, "has the unknown case \(name)")
        }
        // The payload is (completion handler, URLSessionTaskDelegate?).
        guard let payload, let offset = Self.delegateOffset(in: type(of: payload.value)) else {
            throw unexpected(.behaviours, "has the case \(name) without a (handler, URLSessionTaskDelegate?) payload")
        }
        let mirrored = Mirror(reflecting: payload.value).children.dropFirst().first?.value as? URLSessionTaskDelegate
        return (BehaviourCase(reporting: reporting, delegateOffset: offset), mirrored)
    }

    /// The offset of the second element of a 2-tuple whose second element is a `URLSessionTaskDelegate?`.
    private static func delegateOffset(in payload: Any.Type) -> Int? {
        var elements: [(offset: Int, type: Any.Type)] = []
        let walked = _forEachField(of: payload, options: []) { _, offset, type, _ in
            elements.append((offset, type))
            return true
        }
        guard walked, elements.count == 2, elements[1].type == Optional<any URLSessionTaskDelegate>.self else { return nil }
        return elements[1].offset
    }

    func verifyReporting(_ probe: CorelibsProbe, _ platform: CorelibsPlatform) throws(HTTPDNSURLSessionError) {
        try Self.requireInstance(probe.session, of: platform.sessionClass, for: .taskRegistry, platform)
        guard let registryClass = registry.registry.type as? AnyClass else { return }
        try Self.requireInstance(registry.registry.value(in: probe.session) as AnyObject, of: registryClass, for: .behaviours, platform)
        for task in probe.tasks {
            try Self.requireInstance(task.object, of: platform.taskClass, for: .workQueue, platform)
            // Tasks are registered asynchronously on the session's queue; read after that, there.
            let found = workQueue(of: task.object).sync {
                Result { () throws(HTTPDNSURLSessionError) in try reporting(ofTask: task.identifier, in: probe.session) }
            }
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
    static var valueType: Any.Type { get }
    /// Calls `read` with a copy of the entry for `key` (in place, and boxed for a `Mirror`); nil
    /// without one.
    static func withBehaviour<Result>(
        forKey key: Int, at address: UnsafeMutableRawPointer, _ read: (UnsafeMutableRawPointer, () -> Any) -> Result
    ) -> Result?
}

extension Dictionary: BehaviourTable where Key == Int {
    fileprivate static var valueType: Any.Type { Value.self }

    fileprivate static func withBehaviour<Result>(
        forKey key: Int, at address: UnsafeMutableRawPointer, _ read: (UnsafeMutableRawPointer, () -> Any) -> Result
    ) -> Result? {
        guard let value = address.assumingMemoryBound(to: Self.self).pointee[key] else { return nil }
        var scratch = value
        return withUnsafeMutablePointer(to: &scratch) { read(UnsafeMutableRawPointer($0), { value as Any }) }
    }
}
