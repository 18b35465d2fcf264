@_spi(Reflection) import Swift
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Reads (and, in one place, writes) internal state of swift-corelibs-foundation's `URLSession`
/// that a custom `URLProtocol` needs but the public API does not give.
///
/// Each workaround lives in its own `CorelibsReflection+….swift` file, says what it works around
/// and how it was observed, and has a test in `CorelibsReflectionTests` that fails when the
/// platform changes under it (a field renamed, retyped or gone). A lookup that fails in a debug
/// build stops at an assertion; a release build falls back to the documented safe behaviour.
/// Observed with Swift 6.3 (swift-corelibs-foundation `FoundationNetworking`).
enum CorelibsReflection {
    /// The value of the stored property `label` of `subject`, searched through its superclasses.
    static func child(_ label: String, of subject: Any) -> Any? {
        var mirror: Mirror? = Mirror(reflecting: subject)
        while let current = mirror {
            for child in current.children where child.label == label {
                return child.value
            }
            mirror = current.superclassMirror
        }
        return nil
    }

    /// The byte offset and type of the stored property `name` declared by `type` itself.
    static func field(_ name: String, of type: Any.Type, classType: Bool) -> (offset: Int, type: Any.Type)? {
        var found: (Int, Any.Type)?
        // `_EachFieldOptions.classType` is a mutable static (not concurrency-safe to read): its raw value.
        _forEachField(of: type, options: classType ? _EachFieldOptions(rawValue: 1 << 0) : []) { fieldName, offset, fieldType, _ in
            guard String(cString: fieldName) == name else { return true }
            found = (offset, fieldType)
            return false
        }
        return found
    }

    /// Stops a debug build when a workaround no longer finds what it relies on.
    static func platformChanged(_ what: String, file: StaticString = #file, line: UInt = #line) {
        assertionFailure("swift-corelibs-foundation changed under a workaround: \(what)", file: file, line: line)
    }
}
