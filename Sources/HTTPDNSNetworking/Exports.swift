// `import HTTPDNSNetworking` gives the two routes that need no corelibs internals: the direct client
// (HTTPDNSDirect) and the loopback proxy (HTTPDNSLoopbackProxy), with the engine and its value types
// from HTTPDNS. The URL protocol route is its own product, chosen on purpose: `import HTTPDNSURLSession`.
@_exported import HTTPDNSDirect
@_exported import HTTPDNSLoopbackProxy
