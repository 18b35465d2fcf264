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
/// at its offset in the struct. The check proves a `Bool` that the initializer leaves false and
/// the setter makes true.
extension CorelibsLayout {
    static func findTimeoutFlag(in platform: CorelibsPlatform) throws(HTTPDNSURLSessionError) -> CorelibsField {
        try require(.timeoutFlag, in: platform.requestType, isClass: false, expected: Bool.self, platform)
    }

    /// Whether `request.timeoutInterval` was assigned.
    func isTimeoutIntervalSet(_ request: URLRequest) -> Bool {
        Self.flag(request, at: timeoutFlagField.offset)
    }

    func verifyTimeoutFlag(_ probe: CorelibsProbe, _ platform: CorelibsPlatform) throws(HTTPDNSURLSessionError) {
        let offset = timeoutFlagField.offset
        // The probe's requests are `Any`: opened, so that the bytes read are the request's own.
        func read<Request>(_ request: Request) -> Bool? {
            guard offset >= 0, offset + MemoryLayout<Bool>.size <= MemoryLayout<Request>.size else { return nil }
            return Self.flag(request, at: offset)
        }
        for (request, expected) in [(probe.requestWithoutTimeout, false), (probe.requestWithTimeout, true)] {
            guard type(of: request) == platform.requestType, let found = _openExistential(request, do: read) else {
                throw Self.refusal(.timeoutFlag, "cannot be checked: the probe's request is a \(type(of: request))", toolchain)
            }
            guard found == expected else {
                throw Self.refusal(.timeoutFlag, "reads \(!expected) where the timeout was \(expected ? "assigned" : "not assigned")", toolchain)
            }
        }
    }

    private static func flag<Request>(_ request: Request, at offset: Int) -> Bool {
        withUnsafeBytes(of: request) { $0.load(fromByteOffset: offset, as: Bool.self) }
    }
}
