/// Why a zone follower could not be configured, bound, or put its zone into service.
///
/// Compare by ``code``; ``detail`` is context for logs and the CLI (which spec, which file, which
/// address, which name broke the zone rules).
package struct HTTPDNSFleetError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable error code.
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case invalidConfiguration
            case invalidZone
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// A `--secondary` spec, a TSIG key file or a NOTIFY address that cannot be used.
        package static let invalidConfiguration = Code(.invalidConfiguration)
        /// The transferred zones, combined, break the zone rules: the zone in service stays.
        package static let invalidZone = Code(.invalidZone)

        package var description: String { base.rawValue }
    }

    package var code: Code
    /// Context for people: what is wrong and where.
    package var detail: String

    package init(_ code: Code, _ detail: String = "") {
        self.code = code
        self.detail = detail
    }

    /// The code, then the detail.
    package var description: String { detail.isEmpty ? code.description : "\(code): \(detail)" }
}
