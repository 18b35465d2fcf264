import CMicroHTTPD
import Foundation

// libmicrohttpd's callbacks are C function pointers without captures; the server core and the
// request context come back through their `void *` arguments.

let serverURILogged: httpdns_mhd_uri_log_callback = { _, uri, _ in
    let context = HTTPServerRequestContext(rawURI: uri.map { String(cString: $0) } ?? "")
    return Unmanaged.passRetained(context).toOpaque()
}

let serverRequestCompleted: MHD_RequestCompletedCallback = { _, _, requestContext, _ in
    guard let requestContext, let pointer = requestContext.pointee else { return }
    Unmanaged<HTTPServerRequestContext>.fromOpaque(pointer).release()
    requestContext.pointee = nil
}

let serverConnectionNotified: MHD_NotifyConnectionCallback = { context, _, _, event in
    guard let context else { return }
    let core = Unmanaged<HTTPServerCore>.fromOpaque(context).takeUnretainedValue()
    switch event {
    case .CONNECTION_NOTIFY_STARTED:
        core.connections.add(1, ordering: .relaxed)
        core.openConnections.add(1, ordering: .relaxed)
    case .CONNECTION_NOTIFY_CLOSED:
        core.openConnections.subtract(1, ordering: .relaxed)
    @unknown default:
        break
    }
}

let serverAccessHandler: MHD_AccessHandlerCallback = { context, connection, url, method, version, upload, uploadSize, requestContext in
    guard let context, let connection, let uploadSize, let requestContext, let pointer = requestContext.pointee else {
        return .NO
    }
    let core = Unmanaged<HTTPServerCore>.fromOpaque(context).takeUnretainedValue()
    let request = Unmanaged<HTTPServerRequestContext>.fromOpaque(pointer).takeUnretainedValue()
    return core.handle(
        request, connection: connection, url: url.map { String(cString: $0) } ?? "/",
        method: method.map { String(cString: $0) } ?? "", version: version.map { String(cString: $0) } ?? "",
        upload: UnsafeRawPointer(upload), uploadSize: uploadSize)
}

let serverHeaderIterator: MHD_KeyValueIterator = { context, _, key, value in
    guard let context, let key else { return .YES }
    let collector = context.assumingMemoryBound(to: HeaderCollector.self)
    collector.pointee.headers.append(
        HTTPServer.Header(name: String(cString: key), value: value.map { String(cString: $0) } ?? ""))
    return .YES
}

let serverContentReader: MHD_ContentReaderCallback = { context, _, buffer, max in
    guard let context, let buffer else { return httpdns_mhd_end_with_error() }
    let reader = Unmanaged<HTTPServerStreamReader>.fromOpaque(context).takeUnretainedValue()
    guard let count = reader.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: max)) else {
        return httpdns_mhd_end_of_stream()
    }
    return count
}

let serverContentReaderFree: MHD_ContentReaderFreeCallback = { context in
    guard let context else { return }
    Unmanaged<HTTPServerStreamReader>.fromOpaque(context).release()
}
