import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Workaround: an upload task's body is on the task, not in its request.
///
/// Observed: `session.upload(for:from:)`, `upload(for:fromFile:)` and `uploadTask(with:from:)` sent
/// an empty body through the protocol (the server saw `len=0`, issue 8 item 1): swift-corelibs-
/// foundation keeps it in the internal `URLSessionTask.knownBody` (`_Body?`: `.none`, `.data`,
/// `.file`, `.stream`) and `request.httpBody` stays nil. Data and download tasks build theirs from
/// the request (`httpBody`, `httpBodyStream`), so only upload tasks read it. The field is read at
/// its offset as its own internal type; the small enum value is then decoded by its case names,
/// which the check proves on a probe task of each shape.
extension CorelibsLayout {
    /// The body corelibs would send for a task.
    enum TaskBody {
        case none
        case data(Data)
        case file(URL)
        case stream(InputStream)
    }

    /// The task's body; nil when it has none recorded (`knownBody == nil`: corelibs would ask the
    /// delegate for a stream).
    ///
    /// - Throws: ``HTTPDNSURLSessionError/Code/unexpectedPlatformState`` for a body it cannot read.
    func body(of task: URLSessionTask) throws(HTTPDNSURLSessionError) -> TaskBody? {
        try decodeBody(knownBodyField.value(in: task))
    }

    /// Reads an `Optional<_Body>` value by its case names and payload types.
    private func decodeBody(_ value: Any) throws(HTTPDNSURLSessionError) -> TaskBody? {
        let optional = Mirror(reflecting: value)
        guard optional.displayStyle == .optional else {
            throw unexpected(.knownBody, "is not an optional (found \(type(of: value)))")
        }
        guard let body = optional.children.first?.value else { return nil }
        let cases = Mirror(reflecting: body)
        guard cases.displayStyle == .enum else {
            throw unexpected(.knownBody, "is not an enum (found \(type(of: body)))")
        }
        guard let payload = cases.children.first else {
            let name = String(describing: body)
            guard name == "none" else { throw unexpected(.knownBody, "has the unknown case \(name)") }
            return TaskBody.none
        }
        switch payload.label {
        case "data":
            if let data = payload.value as? DispatchData { return .data(Data(copying: data)) }
            if let data = payload.value as? Data { return .data(data) }
        case "file":
            if let url = payload.value as? URL { return .file(url) }
        case "stream":
            if let stream = payload.value as? InputStream { return .stream(stream) }
        default:
            throw unexpected(.knownBody, "has the unknown case \(payload.label ?? "?")")
        }
        throw unexpected(.knownBody, "has the case \(payload.label ?? "?") with a \(type(of: payload.value))")
    }

    func verifyBodies(_ probe: CorelibsProbe, _ platform: CorelibsPlatform) throws(HTTPDNSURLSessionError) {
        for task in probe.tasks {
            try Self.requireInstance(task.object, of: platform.taskClass, for: .knownBody, platform)
            let found: TaskBody?
            do {
                found = try decodeBody(knownBodyField.value(in: task.object))
            } catch {
                throw error.refusingInstall()
            }
            let matches = switch (found, task.body) {
            case (.none?, .none), (.stream?, .stream): true
            case (.data(let data)?, .data(let expected)): data == expected
            case (.file(let url)?, .file(let expected)): url == expected
            default: false
            }
            guard matches else {
                throw Self.refusal(.knownBody, "does not read back as the probe's \(task.body) body", toolchain)
            }
        }
    }
}

extension Data {
    fileprivate init(copying data: DispatchData) {
        var bytes = Data(count: data.count)
        bytes.withUnsafeMutableBytes { buffer in
            _ = data.copyBytes(to: buffer.bindMemory(to: UInt8.self))
        }
        self = bytes
    }
}
