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
/// written here, through its field offset, with the key type it really has.
extension CorelibsReflection {
    /// The keys of `URLProtocol._PropertyKey` this protocol sets.
    enum ProtocolProperty: String {
        case responseData
        case temporaryFileURL
    }

    /// Where `URLProtocol.properties` lives, and its type; looked up once.
    private static let propertiesField: (offset: Int, type: Any.Type)? = field("properties", of: URLProtocol.self, classType: true)

    /// Sets `properties[key] = value` on `urlProtocol`; false (and a debug assertion) when the table
    /// is not found or its key type is not a `String`-backed enum with that case.
    ///
    /// Must run where corelibs reads the table: on the task's work queue.
    @discardableResult
    static func setProperty(_ value: Any, for key: ProtocolProperty, on urlProtocol: URLProtocol) -> Bool {
        guard let field = propertiesField, let table = field.type as? any PropertyTable.Type else {
            platformChanged("URLProtocol.properties not found or not a [_PropertyKey: Any]")
            return false
        }
        let stored = withExtendedLifetime(urlProtocol) {
            let base = Unmanaged.passUnretained(urlProtocol).toOpaque()
            return table.store(value, rawKey: key.rawValue, at: base + field.offset)
        }
        if !stored { platformChanged("URLProtocol._PropertyKey has no case \(key.rawValue)") }
        return stored
    }
}

/// The dictionary type of `URLProtocol.properties`, opened without naming its internal key type.
private protocol PropertyTable {
    static func store(_ value: Any, rawKey: String, at address: UnsafeMutableRawPointer) -> Bool
}

extension Dictionary: PropertyTable where Key: RawRepresentable, Key.RawValue == String, Value == Any {
    fileprivate static func store(_ value: Any, rawKey: String, at address: UnsafeMutableRawPointer) -> Bool {
        guard let key = Key(rawValue: rawKey) else { return false }
        address.assumingMemoryBound(to: Self.self).pointee[key] = value
        return true
    }
}
