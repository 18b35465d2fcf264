// `import HTTPDNSURLSession` gives the URL protocol and everything of HTTPDNSDirect (the client it
// installs) and HTTPDNS (the engine).
@_exported import HTTPDNSDirect
