// HTTPDNSTestSupport module.
