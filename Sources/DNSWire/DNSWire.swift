// DNSWire module.
