// HTTPDNSTransport module.
