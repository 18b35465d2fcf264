#!/usr/bin/env python3
"""Writes the DNS payload of each packet in a dnsmasq --dumpfile pcap to <prefix>-N.bin."""
import struct, sys

def payloads(path):
    data = open(path, "rb").read()
    magic, _, _, _, _, _, linktype = struct.unpack("<IHHiIII", data[:24])
    assert magic == 0xA1B2C3D4, hex(magic)
    offset = 24
    while offset < len(data):
        _, _, incl, _ = struct.unpack("<IIII", data[offset:offset + 16])
        packet = data[offset + 16:offset + 16 + incl]
        offset += 16 + incl
        version = packet[0] >> 4
        ip_len = (packet[0] & 0x0F) * 4 if version == 4 else 40
        yield packet[ip_len + 8:]  # skip the IP and UDP headers

for path, names in zip(sys.argv[1::2], sys.argv[2::2]):
    for payload, name in zip(payloads(path), names.split(",")):
        open(name + ".bin", "wb").write(payload)
        print(name, len(payload))
