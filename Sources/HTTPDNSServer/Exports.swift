// `import HTTPDNSServer` brings the engine types its configuration uses (upstream resolvers, hygiene).
@_exported import HTTPDNS
