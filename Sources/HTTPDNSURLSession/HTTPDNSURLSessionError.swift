import Foundation

/// Why the URL protocol route refused to install, or refused one request.
///
/// The route reads internals of swift-corelibs-foundation (`URLSessionTask.workQueue`,
/// `URLSessionTask.knownBody`, …) that no public API gives. They are checked once per process, when
/// the first configuration is installed: on a toolchain where one is missing or has another type,
/// `URLSessionConfiguration.httpdnsInstall(_:)` throws ``Code/unsupportedPlatform`` instead of
/// installing a route that would send an empty body or crash. Compare errors by ``code``.
public struct HTTPDNSURLSessionError: Error, Sendable, CustomStringConvertible {
    /// A stable error code.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case unsupportedPlatform
            case unexpectedPlatformState
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// An internal the route relies on is missing or has another type on this toolchain; nothing
        /// was installed. The direct client (`HTTPDNSClient`) and the loopback proxy do not use it.
        public static let unsupportedPlatform = Code(.unsupportedPlatform)
        /// One request found swift-corelibs-foundation in a state the route does not understand (a new
        /// way for a task to report, for example); that request failed, others go on.
        public static let unexpectedPlatformState = Code(.unexpectedPlatformState)

        public var description: String { base.rawValue }
    }

    /// The stable code.
    public var code: Code
    /// What was found, completing "… `internalName` …" (for example `was not found`).
    public var detail: String
    /// The internal concerned, as `Type.member` (for example `URLSessionTask.workQueue`).
    public var internalName: String
    /// The toolchain the route runs on (for example `Swift 6.3.1 (swift-corelibs-foundation)`).
    public var toolchain: String

    package init(_ code: Code, _ internalName: String, _ detail: String, toolchain: String) {
        self.code = code
        self.internalName = internalName
        self.detail = detail
        self.toolchain = toolchain
    }

    /// A full sentence: what failed, the internal, what was found and the toolchain.
    public var description: String {
        switch code {
        case .unsupportedPlatform:
            "The URL protocol route cannot be installed on \(toolchain): the internal \(internalName) \(detail)."
        default:
            "The URL protocol route failed the request on \(toolchain): the internal \(internalName) \(detail)."
        }
    }
}

extension HTTPDNSURLSessionError: LocalizedError {
    /// The same sentence as ``description`` (what `localizedDescription` shows).
    public var errorDescription: String? { description }
}
