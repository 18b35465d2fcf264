// HTTPDNSServer module.
