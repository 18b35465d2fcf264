import Foundation
import HTTPDNSCore
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Every swift-corelibs-foundation internal the URL protocol route reads or writes, checked once:
/// where each lives, with a type proven at the check, so that a request reads it at a known offset.
///
/// Each workaround lives in its own `CorelibsLayout+….swift` file, says what it works around and
/// how it was observed, and has a test in `CorelibsReflectionTests` that fails when the platform
/// changes under it. The check runs when the first configuration is installed (``checkCorelibs()``,
/// once per process), in release builds as in debug ones: a name not found, a type that differs,
/// or a probe object that does not read back as it was made refuses the installation with an
/// ``HTTPDNSURLSessionError`` naming the internal. Nothing falls back: what a request can still
/// meet (a task that already finished, a new way to report) fails that request with a named error.
/// Observed with Swift 6.3 (swift-corelibs-foundation `FoundationNetworking`).
struct CorelibsLayout: Sendable {
    /// The internals, as errors name them (`Type.member`).
    enum Internal: String, CaseIterable, Sendable {
        case workQueue = "URLSessionTask.workQueue"
        case session = "URLSessionTask.session"
        case knownBody = "URLSessionTask.knownBody"
        case properties = "URLProtocol.properties"
        case timeoutFlag = "URLRequest.isTimeoutIntervalSet"
        case taskRegistry = "URLSession.taskRegistry"
        case behaviours = "URLSession._TaskRegistry.behaviours"

        /// The stored property's own name.
        var member: String { String(rawValue.split(separator: ".").last!) }
    }

    let workQueueField: CorelibsField
    let sessionField: CorelibsField
    let knownBodyField: CorelibsField
    let properties: PropertiesAccess
    let timeoutFlagField: CorelibsField
    let registry: RegistryAccess
    let toolchain: String

    /// This process's corelibs, once checked.
    private static let checkedCorelibs = HTTPDNSLock<Result<CorelibsLayout, HTTPDNSURLSessionError>?>(nil)

    /// This process's corelibs: checked by the first call (the first installation), then kept.
    ///
    /// Two first installations at once may both run the check; one result is kept.
    static func checkCorelibs() -> Result<CorelibsLayout, HTTPDNSURLSessionError> {
        if let kept = checkedCorelibs.withLock({ $0 }) { return kept }
        let result = Result { () throws(HTTPDNSURLSessionError) in try CorelibsLayout(checking: .corelibs) }
        return checkedCorelibs.withLock { kept in
            if let kept { return kept }
            kept = result
            return result
        }
    }

    /// The kept check, without running it: a request never starts the check (it runs on corelibs'
    /// work queue, where the check's probe could not read its registry); nil before any installation.
    static var checked: Result<CorelibsLayout, HTTPDNSURLSessionError>? {
        checkedCorelibs.withLock { $0 }
    }

    /// Looks up every internal in `platform`'s types, then reads each back from a probe.
    ///
    /// Must not run on a corelibs work queue: the probe's task registry is read on its own.
    ///
    /// - Throws: ``HTTPDNSURLSessionError/Code/unsupportedPlatform`` naming the first internal that
    ///   is missing, has another type, or reads back wrong.
    init(checking platform: CorelibsPlatform) throws(HTTPDNSURLSessionError) {
        toolchain = platform.toolchain
        workQueueField = try Self.findWorkQueue(in: platform)
        sessionField = try Self.require(.session, in: platform.taskClass, platform)
        knownBodyField = try Self.require(.knownBody, in: platform.taskClass, platform)
        properties = try Self.findProperties(in: platform)
        timeoutFlagField = try Self.findTimeoutFlag(in: platform)
        registry = try Self.findRegistry(in: platform)

        let probe = platform.makeProbe()
        defer { probe.close() }
        try verifySession(probe, platform)
        try verifyBodies(probe, platform)
        try verifyTimeoutFlag(probe, platform)
        try verifyReporting(probe, platform)
    }

    /// The stored property `which` of `type`; refuses when there is none, or when `expected` is
    /// given and differs.
    static func require(
        _ which: Internal, in type: Any.Type, isClass: Bool = true, expected: Any.Type? = nil, _ platform: CorelibsPlatform
    ) throws(HTTPDNSURLSessionError) -> CorelibsField {
        guard let field = CorelibsField.find(which.member, in: type, isClass: isClass) else {
            throw refusal(which, "was not found", platform.toolchain)
        }
        if let expected, field.type != expected {
            throw refusal(which, "has the type \(String(reflecting: field.type)), not \(String(reflecting: expected))", platform.toolchain)
        }
        return field
    }

    /// Refuses when a probe object is not of the class whose offsets are about to be used on it.
    static func requireInstance(
        _ object: AnyObject, of expected: AnyClass, for which: Internal, _ platform: CorelibsPlatform
    ) throws(HTTPDNSURLSessionError) {
        guard CorelibsField.isInstance(object, of: expected) else {
            throw refusal(which, "cannot be checked: the probe's \(type(of: object)) is not a \(expected)", platform.toolchain)
        }
    }

    static func refusal(_ which: Internal, _ detail: String, _ toolchain: String) -> HTTPDNSURLSessionError {
        HTTPDNSURLSessionError(.unsupportedPlatform, which.rawValue, detail, toolchain: toolchain)
    }

    /// What a request met that the check could not foresee; the request fails with it.
    func unexpected(_ which: Internal, _ detail: String) -> HTTPDNSURLSessionError {
        HTTPDNSURLSessionError(.unexpectedPlatformState, which.rawValue, detail, toolchain: toolchain)
    }
}

extension HTTPDNSURLSessionError {
    /// The same finding, as a refusal to install (a probe read back what a request would fail on).
    func refusingInstall() -> HTTPDNSURLSessionError {
        HTTPDNSURLSessionError(.unsupportedPlatform, internalName, detail, toolchain: toolchain)
    }
}
