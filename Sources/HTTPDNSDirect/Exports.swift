// `import HTTPDNSDirect` gives the client and, from HTTPDNS, the engine and its value types.
@_exported import HTTPDNS
