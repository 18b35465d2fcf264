@_spi(Reflection) import Swift

/// A stored property of a swift-corelibs-foundation type, found by name when the install check runs:
/// its byte offset and its type, so that a request reads it with one load instead of a `Mirror` walk.
///
/// The type may be internal to corelibs (`URLSessionTask._Body`): it is never named here, only
/// opened generically (`load(as:)` with the metadata found at the check).
struct CorelibsField: @unchecked Sendable {  // only a metatype and an offset: immutable
    /// Where the property starts in its object (or struct value).
    let offset: Int
    /// Its declared type, as the runtime reports it.
    let type: Any.Type

    /// The stored property `name` of `type` (a class's superclasses included, offsets from the start
    /// of the object); nil when there is none.
    static func find(_ name: String, in type: Any.Type, isClass: Bool) -> CorelibsField? {
        var found: CorelibsField?
        // `_EachFieldOptions.classType` is a mutable static (not concurrency-safe to read): its raw value.
        _forEachField(of: type, options: isClass ? _EachFieldOptions(rawValue: 1 << 0) : []) { fieldName, offset, fieldType, _ in
            guard String(cString: fieldName) == name else { return true }
            found = CorelibsField(offset: offset, type: fieldType)
            return false
        }
        return found
    }

    /// The field's current value in `object`, copied out as its own (possibly internal) type.
    ///
    /// `object` must be an instance of the class the field was found in (or of a subclass).
    func value(in object: AnyObject) -> Any {
        let address = UnsafeRawPointer(Unmanaged.passUnretained(object).toOpaque()) + offset
        // Opened explicitly: the value is copied out as the field's own type, never as `Any`.
        func load<T>(_: T.Type) -> Any { address.load(as: T.self) }
        return withExtendedLifetime(object) { _openExistential(type, do: load) }
    }

    /// The field's value in `object` when the check proved its type is `T`.
    func load<T>(_: T.Type, in object: AnyObject) -> T {
        withExtendedLifetime(object) {
            (UnsafeRawPointer(Unmanaged.passUnretained(object).toOpaque()) + offset).load(as: T.self)
        }
    }

    /// The address of the field in `object`, for the one workaround that writes (`URLProtocol.properties`).
    func address(in object: AnyObject) -> UnsafeMutableRawPointer {
        Unmanaged.passUnretained(object).toOpaque() + offset
    }

    /// Whether `object` is an instance of `expected` or of one of its subclasses (offsets found in
    /// `expected` are then valid in it).
    static func isInstance(_ object: AnyObject, of expected: AnyClass) -> Bool {
        var current: AnyClass? = Swift.type(of: object)
        while let candidate = current {
            if candidate == expected { return true }
            current = _getSuperclass(candidate)
        }
        return false
    }
}
