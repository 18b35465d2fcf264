// `import HTTPDNSNetworking` is all an app needs: the client and URL protocol here, the engine and its
// value types from HTTPDNS.
@_exported import HTTPDNS
