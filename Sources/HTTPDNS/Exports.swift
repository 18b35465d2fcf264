// The value types of the engine's API (answers, errors, host policy, hygiene, trust, resolvers) live in
// HTTPDNSCore, a module with no I/O that is not a product of its own: `import HTTPDNS` brings them.
@_exported import HTTPDNSCore
