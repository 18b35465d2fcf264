// HTTPDNSCore module.
