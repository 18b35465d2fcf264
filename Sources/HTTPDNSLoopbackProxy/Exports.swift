// `import HTTPDNSLoopbackProxy` gives the proxy and, from HTTPDNS, the engine and its value types;
// the connection monitor it shares with the client comes from HTTPDNSDirect.
@_exported import HTTPDNS
@_exported import protocol HTTPDNSDirect.HTTPDNSConnectionMonitor
