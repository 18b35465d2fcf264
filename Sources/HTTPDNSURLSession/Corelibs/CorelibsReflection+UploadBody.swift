import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Workaround: an upload task's body is on the task, not in its request.
///
/// Observed: `session.upload(for:from:)`, `upload(for:fromFile:)` and `uploadTask(with:from:)` sent
/// an empty body through the protocol (the server saw `len=0`, issue 8 item 1): swift-corelibs-
/// foundation keeps it in the internal `URLSessionTask.knownBody` (`_Body`: `.none`, `.data`,
/// `.file`, `.stream`) and `request.httpBody` stays nil.
extension CorelibsReflection {
    /// The body corelibs would send for `task`.
    enum TaskBody {
        case none
        case data(Data)
        case file(URL)
        case stream(InputStream)
    }

    /// The task's body; nil when it has none recorded (`knownBody == nil`: corelibs would ask the
    /// delegate for a stream), or (with a debug assertion) when the field is not found.
    static func body(of task: URLSessionTask) -> TaskBody? {
        var mirror: Mirror? = Mirror(reflecting: task)
        var found = false
        var value: Any?
        while let current = mirror, !found {
            for child in current.children where child.label == "knownBody" {
                found = true
                value = child.value
            }
            mirror = current.superclassMirror
        }
        guard found, let value else {
            platformChanged("URLSessionTask.knownBody not found")
            return nil
        }
        // `knownBody` is an Optional<_Body>: unwrap it, then read the case and its payload.
        let optional = Mirror(reflecting: value)
        guard optional.displayStyle == .optional else {
            platformChanged("URLSessionTask.knownBody is not an optional")
            return nil
        }
        guard let body = optional.children.first?.value else { return nil }
        let enumMirror = Mirror(reflecting: body)
        guard let payload = enumMirror.children.first else {
            return String(describing: body) == "none" ? TaskBody.none : nil
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
            break
        }
        platformChanged("URLSessionTask._Body case \(payload.label ?? "?") not understood")
        return nil
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
