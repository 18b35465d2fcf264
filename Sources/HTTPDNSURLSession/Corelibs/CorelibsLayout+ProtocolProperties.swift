import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Workaround: a custom protocol cannot hand a download's file, or a whole body, to the session.
///
/// Observed: at the end of a task swift-corelibs-foundation reads the protocol's INTERNAL
/// `properties` table: `.temporaryFileURL` is the `location` of a download (force-unwrapped for
/// delegates: `session.download(from:)` crashed with SIGILL, and the completion handler got
/// `location == nil`, issue 8 item 2), `.responseData` the body of a completion-handler data task
/// (which `didLoad` overwrites with each chunk, so only the last chunk arrived). The table is
/// written here, through its field offset, with the key type it really has; the check proves the
/// table is a `[Key: Any]` whose `String`-backed key has every case below.
extension CorelibsLayout {
    /// The keys of `URLProtocol._PropertyKey` this protocol sets.
    enum ProtocolProperty: String, CaseIterable {
        case responseData
        case temporaryFileURL
    }

    /// Where `URLProtocol.properties` lives, and its dictionary type opened.
    struct PropertiesAccess: @unchecked Sendable {  // an offset and a metatype: immutable
        let field: CorelibsField
        fileprivate let table: any PropertyTable.Type
    }

    static func findProperties(in platform: CorelibsPlatform) throws(HTTPDNSURLSessionError) -> PropertiesAccess {
        let field = try require(.properties, in: platform.protocolClass, platform)
        guard let table = field.type as? any PropertyTable.Type else {
            throw refusal(.properties, "has the type \(String(reflecting: field.type)), not a [String-backed key: Any]", platform.toolchain)
        }
        for key in ProtocolProperty.allCases where !table.hasKey(key.rawValue) {
            throw refusal(.properties, "has no key \(key.rawValue)", platform.toolchain)
        }
        return PropertiesAccess(field: field, table: table)
    }

    /// Sets `properties[key] = value` on `urlProtocol`.
    ///
    /// Must run where corelibs reads the table: on the task's work queue.
    ///
    /// - Throws: ``HTTPDNSURLSessionError/Code/unexpectedPlatformState`` if the key is refused
    ///   (the check found it, so only a platform changing at run time would).
    func setProperty(_ value: Any, for key: ProtocolProperty, on urlProtocol: URLProtocol) throws(HTTPDNSURLSessionError) {
        let stored = withExtendedLifetime(urlProtocol) {
            properties.table.store(value, rawKey: key.rawValue, at: properties.field.address(in: urlProtocol))
        }
        guard stored else { throw unexpected(.properties, "refused the key \(key.rawValue)") }
    }
}

/// The dictionary type of `URLProtocol.properties`, opened without naming its internal key type.
private protocol PropertyTable {
    static func hasKey(_ rawKey: String) -> Bool
    static func store(_ value: Any, rawKey: String, at address: UnsafeMutableRawPointer) -> Bool
}

extension Dictionary: PropertyTable where Key: RawRepresentable, Key.RawValue == String, Value == Any {
    fileprivate static func hasKey(_ rawKey: String) -> Bool {
        Key(rawValue: rawKey) != nil
    }

    fileprivate static func store(_ value: Any, rawKey: String, at address: UnsafeMutableRawPointer) -> Bool {
        guard let key = Key(rawValue: rawKey) else { return false }
        address.assumingMemoryBound(to: Self.self).pointee[key] = value
        return true
    }
}
