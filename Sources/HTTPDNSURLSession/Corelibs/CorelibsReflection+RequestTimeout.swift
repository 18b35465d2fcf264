import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Workaround: whether a request's `timeoutInterval` was set, which decides the idle timeout.
///
/// Observed: swift-corelibs-foundation's own HTTP protocol uses `request.timeoutInterval` only when
/// it was SET (the internal `URLRequest.isTimeoutIntervalSet`, by the setter, not by
/// `URLRequest(url:timeoutInterval:)`), and the configuration's `timeoutIntervalForRequest`
/// otherwise; the flag is not public (and `URLRequest`'s custom mirror hides it), so it is read
/// through its field offset.
extension CorelibsReflection {
    private static let timeoutFlagField: (offset: Int, type: Any.Type)? = field("isTimeoutIntervalSet", of: URLRequest.self, classType: false)

    /// Whether `request.timeoutInterval` was assigned; nil (and a debug assertion) when unknown.
    static func isTimeoutIntervalSet(_ request: URLRequest) -> Bool? {
        guard let field = timeoutFlagField, field.type == Bool.self else {
            platformChanged("URLRequest.isTimeoutIntervalSet not found")
            return nil
        }
        return withUnsafeBytes(of: request) { bytes in
            bytes.load(fromByteOffset: field.offset, as: Bool.self)
        }
    }
}
