#!/usr/bin/env python3
"""Writes the seed corpora under Fuzz/Corpus/<target>/ (run from the repository root).

Seeds are valid inputs taken from the test fixtures and unit tests, plus the reproducers of the
first fuzzing campaign (issue 12). Format targets read a few choice bytes before the answer body
(configuration, family, hosts, HTTP status: see FuzzTargets+Formats.swift), so each seed starts
with them. Inputs that fuzzing finds later are added as files of their own.
"""
import hashlib
import os
import shutil
import struct

ROOT = "Fuzz/Corpus"


def write(target, name, data):
    os.makedirs(os.path.join(ROOT, target), exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(ROOT, target, name), "wb") as f:
        f.write(data)


def dns_name(text):
    out = b""
    for label in text.rstrip(".").split("."):
        out += bytes([len(label)]) + label.encode()
    return out + b"\0"


def dns_answer(host, rtype, records, rcode=0):
    """A response to `host`/`rtype` with (name, type, ttl, rdata) answers."""
    header = struct.pack(">HHHHHH", 0, 0x8180 | rcode, 1, len(records), 0, 0)
    question = dns_name(host) + struct.pack(">HH", rtype, 1)
    answers = b""
    for name, kind, ttl, rdata in records:
        answers += dns_name(name) + struct.pack(">HHIH", kind, 1, ttl, len(rdata)) + rdata
    return header + question + answers


def main():
    shutil.rmtree(ROOT, ignore_errors=True)
    fixtures = "Tests/DNSWireTests/Fixtures"
    for name in sorted(os.listdir(fixtures)):
        if name.endswith(".bin"):
            with open(os.path.join(fixtures, name), "rb") as f:
                write("dns-codec", name, f.read())

    for index, text in enumerate(["www.example.com", "www.example.com.", "a\\.b.c.", "\\065bc\\\\d", "_srv._tcp.example.com",
                                  "xn--bcher-kva.example", "."]):
        write("dns-name", f"name-{index}", text)

    host = "www.example.test"
    a = bytes([192, 0, 2, 1])
    write("doh-wire", "a", b"\0\0\0\0" + dns_answer(host, 1, [(host, 1, 300, a)]))
    write("doh-wire", "aaaa", b"\0\1\0\0" + dns_answer(host, 28, [(host, 28, 60, bytes(15) + b"\1")]))
    write("doh-wire", "cname", b"\1\0\0\0" + dns_answer(host, 1, [(host, 5, 300, dns_name("edge.example.net")),
                                                                 ("edge.example.net", 1, 20, a)]))
    write("doh-wire", "nxdomain", b"\0\0\0\0" + dns_answer(host, 1, [], rcode=3))
    # Issue 12, finding 1: a TTL of 2^31 (RFC 2181 §8: read as 0).
    write("doh-wire", "ttl-2-31", b"\0\0\0\0" + bytes.fromhex(
        "00008180000100010000000003777777076578616d706c6504746573740000010001c00c00010001800000000004c0000201"))

    write("doh-json", "a", b"\0\0\0" + b'{"Status":0,"Question":[{"name":"www.example.test.","type":1}],'
          b'"Answer":[{"name":"www.example.test.","type":1,"TTL":300,"data":"192.0.2.1"}]}')
    write("doh-json", "cname", b"\1\0\0" + b'{"Status":0,"Answer":[{"name":"www.example.test.","type":5,"TTL":300,'
          b'"data":"edge.example.net."},{"name":"edge.example.net.","type":28,"TTL":60,"data":"2001:db8::1"}]}')
    write("doh-json", "nxdomain", b"\0\0\0" + b'{"Status":3}')

    write("ip-list", "both", b"\2\0\0" + b'{"ips":["1.2.3.4","2400:3200::1","5.6.7.8"],"ttl":30}')
    write("ip-list", "host", b"\0\0\0" + b' {"host":"WWW.example.test","ips":["198.51.100.7"],"ttl":null,"extra":{"a":[1,2]}} ')

    write("dnspod", "single", b"\0\0\0\0" + b"1.2.3.4;5.6.7.8,120|9.9.9.9")
    write("dnspod", "addrs", b"\0\2\0\0" + b"1.2.3.4,60-2001:db8::1,60")
    write("dnspod", "batch", b"\0\0\1\0" + b"a.test.:1.1.1.1;2.2.2.2,300|9.9.9.9\nwww.example.test.:3.3.3.3,60\nb.test.:0\n")
    write("dnspod", "des", b"\1\0\0\0" + b"6c2b0cd3b2f1a45e0fe11dd0c9e2d9a3")
    write("dnspod", "aes", b"\2\0\0\0" + b"07070707070707070707070707070707" + b"00112233445566778899aabbccddeeff")

    write("alibaba", "legacy", b"\0\2\0\0" + b'{"host":"www.example.test","ips":["1.2.3.4","5.6.7.8"],'
          b'"ipsv6":["2400:3200::1"],"ttl":57,"origin_ttl":120,"client_ip":"42.120.74.1"}')
    write("alibaba", "batch", b"\0\0\1\0" + b'{"dns":[{"host":"a.test","client_ip":"42.120.74.1","ips":["1.1.1.1"],"type":1,'
          b'"ttl":106},{"host":"b.test","ips":["2.2.2.2"],"type":1,"ttl":100}]}')
    write("alibaba", "v2", b"\1\2\1\0" + b'{"code":"success","mode":0,"data":{"answers":[{"dn":"a.test","v4":{"ips":["1.1.1.1"],'
          b'"ttl":60},"v6":{"ips":["2400::1"],"ttl":30}}]}}')
    write("alibaba", "v2-encrypted", b"\2\0\0\0" + b'{"code":"success","mode":1,"data":"0707070707070707070707070707070700112233445566778899aabbccddeeff"}')
    write("alibaba", "error", b"\0\0\0\3" + b'{"code":"InvalidSignature"}')

    for index, text in enumerate(['{"a":[1,2.5e3,-0.1,true,false,null],"b":{"c":"\\u00e9\\ud83d\\ude00\\n"}}', '"x"', "[]",
                                  '{"ips":["1.2.3.4"],"ttl":30}', "[[[[[[[[[[1]]]]]]]]]]"]):
        write("json", f"doc-{index}", text)

    write("url-query", "host", b"\0www.example.test")
    write("url-query", "batch", b"\1a.test,b.test:https://x.test/ a&b=c#d")
    write("url-query", "base", b"\0https://dns.example/dns-query///")

    for index, text in enumerate(["192.0.2.1", "0.0.0.0", "::", "::1", "2001:db8::1", "[2001:db8::1]", "::ffff:192.0.2.1",
                                  "fe80::1:2:3:4", "1:2:3:4:5:6:7:8", "::1.2.3.4", "01.2.3.4"]):
        write("ip-address", f"address-{index}", text)
    write("ip-address", "bytes16", bytes(range(16)))
    write("ip-address", "bracketed-v4", "[2.0.2.1]")  # found by fuzzing: brackets are IPv6's only

    write("host-pattern", "mixed", "*.example.com\napi.test.\nWWW.Example.COM\nshop.example.com")
    write("host-pattern", "everything", "*\n192.0.2.1")
    write("host-pattern", "apex", "*.example.com\nexample.com")

    write("cache-control", "plain", "max-age=300")
    write("cache-control", "age", "public, max-age=60, s-maxage=10\n15")
    write("cache-control", "big", "no-cache, MAX-AGE = 99999999999999\n1")

    write("zone-file", "basic", '{"WWW.Example.TEST.": {"A": ["192.0.2.1"], "aaaa": ["2001:DB8::1"], "Ttl": 42}, "b.test": {"A": []}}')
    # Issue 12, finding 2 and what the first in-repository runs found.
    write("zone-file", "cname-two-dots", '{"a.test": {"CNAME": "t.."}}')
    write("zone-file", "name-two-dots", '{"www..": {"A": ["192.0.2.1"]}}')
    write("zone-file", "wildcard-cname-two-dots", '{"*.Sequencst": {"CNAME": "Ta.TeE.."}, "Aater": {"A": ["191.0.2.1"]}}')
    write("dns-name", "two-dots", "..")
    write("dns-name", "name-two-dots", "www..")
    write("json", "big-exponent", "5e55555555555555")
    write("zone-file", "wildcard", '{"*.example.test": {"A": ["192.0.2.9"]}, "alias.example.test": {"CNAME": "Target.Test."},'
          ' "target.test": {"A": ["192.0.2.1"]}}')

    write("proxy-protocol", "v1-tcp4", b"PROXY TCP4 192.0.2.1 198.51.100.2 56324 443\r\nGET / HTTP/1.1\r\n")
    write("proxy-protocol", "v1-tcp6", b"PROXY TCP6 2001:db8::1 2001:db8::2 1 65535\r\n")
    write("proxy-protocol", "v1-unknown", b"PROXY UNKNOWN\r\n")
    # Found by fuzzing: a v1 line whose CRLF ends at byte 108, one past the spec's 107.
    write("proxy-protocol", "v1-108-bytes", b"PROXY UNKNOWN " + b"x" * 92 + b"\r\n")
    signature = bytes([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a])
    write("proxy-protocol", "v2-tcp4", signature + bytes([0x21, 0x11, 0, 12, 192, 0, 2, 1, 198, 51, 100, 2, 0xdc, 0x04, 1, 0xbb]))
    write("proxy-protocol", "v2-tcp6-tlv", signature + bytes([0x21, 0x21, 0, 39]) + bytes(15) + b"\1" + bytes(15) + b"\2"
          + bytes([0, 80, 1, 0xbb, 0x04, 0, 0]))
    write("proxy-protocol", "v2-local", signature + bytes([0x20, 0x00, 0, 0]))

    write("server-query", "dnspod", "dn=www.example.test,b.test&ip=198.51.100.7&type=addrs&ttl=1")
    write("server-query", "doh-get", "dns=AAABAAABAAAAAAAAA3d3dwdleGFtcGxlA2NvbQAAAQAB&ct=application/dns-message")
    write("server-query", "escapes", "name=www.example.test.&type=AAAA&edns_client_subnet=192.0.2.0%2F24&q=a+b%2Bc%20d")
    write("server-query", "broken", "a=%zz&b=%&&c&=v&%41%42=%e4%bd%a0+%FF&d=1%2")
    write("server-query", "repeated", "host=a.test&host=b.test&&host&ips=1")

    def dns_query(host, rtype, qid=0x1234, flags=0x0100, edns=False):
        header = struct.pack(">HHHHHH", qid, flags, 1, 0, 0, 1 if edns else 0)
        opt = b"\0" + struct.pack(">HHIH", 41, 4096, 0, 0) if edns else b""
        return header + dns_name(host) + struct.pack(">HH", rtype, 1) + opt

    write("server-doh", "a", dns_query("www.example.test", 1))
    write("server-doh", "alias-aaaa-edns", dns_query("Alias.EXAMPLE.test", 28, edns=True))
    write("server-doh", "wildcard", dns_query("deep.x.wild.example.test", 1, flags=0x0110))
    write("server-doh", "nxdomain", dns_query("nowhere.example.test", 1))
    write("server-doh", "nodata-txt", dns_query("www.example.test", 16))
    write("server-doh", "apex", dns_query("example.test", 1))
    write("server-doh", "edns-version-1", dns_query("www.example.test", 1, edns=True)[:-8] + struct.pack(">HHIH", 41, 4096, 0x00010000, 0))
    write("server-doh", "a-response", dns_query("www.example.test", 1, flags=0x8180))
    write("server-doh", "truncated", dns_query("www.example.test", 1)[:20])
    # Found by fuzzing: a compression pointer into the header, so that the ID is part of the name.
    write("server-doh", "pointer-into-id", bytes.fromhex("e4340110000100000000000004280721" "64c000010000 01".replace(" ", "")))

    # server-dot: the size of the reads (first byte, 1 + value % 32), then a DoT stream of
    # length-prefixed queries (RFC 7858 §3.3); "padded" carries an EDNS Padding option (RFC 7830).
    def framed(*messages):
        return b"".join(struct.pack(">H", len(m)) + m for m in messages)

    padded = dns_query("www.example.test", 1, qid=0x2222, edns=True)[:-2] + struct.pack(">HHH", 8, 12, 4) + b"\0" * 4
    write("server-dot", "two-queries", b"\x1f" + framed(dns_query("www.example.test", 1), dns_query("alias.example.test", 28, qid=7)))
    write("server-dot", "padded-bytewise", b"\x00" + framed(padded))
    write("server-dot", "pipelined-then-half", b"\x04" + framed(dns_query("www.example.test", 1), padded) + b"\x00\x40" + padded[:10])
    write("server-dot", "empty-message", b"\x02" + b"\x00\x00" + framed(dns_query("nowhere.example.test", 1)))

    # server-doq: the first byte the size of the reads (1 + value % 32) and FIN with the last read
    # (its top bit), then one DoQ stream (RFC 9250 §4.2): a two-byte length and a query with ID 0.
    doq_a = dns_query("www.example.test", 1, qid=0)
    doq_padded = dns_query("www.example.test", 1, qid=0, edns=True)[:-2] + struct.pack(">HHH", 8, 12, 4) + b"\0" * 4
    doq_keepalive = dns_query("www.example.test", 1, qid=0, edns=True)[:-2] + struct.pack(">HHH", 4, 11, 0)
    write("server-doq", "query-fin", b"\x9f" + framed(doq_a))
    write("server-doq", "padded-bytewise-fin", b"\x80" + framed(doq_padded))
    write("server-doq", "no-fin-yet", b"\x03" + framed(dns_query("alias.example.test", 28, qid=0)))
    write("server-doq", "id-not-zero", b"\x84" + framed(dns_query("www.example.test", 1, qid=0x1234)))
    write("server-doq", "bytes-past-query", b"\x85" + framed(doq_a) + b"\x00\x0c")
    write("server-doq", "fin-early", b"\x81" + framed(doq_a)[:-3])
    write("server-doq", "keepalive", b"\x9f" + framed(doq_keepalive))

    # client-doq: the size of the reads (first byte, 1 + value % 64), whether the stream ends with
    # FIN (second byte, odd), then a DoQ answer stream (RFC 9250: one length-prefixed message).
    answer = dns_query("www.example.test", 1)
    write("client-doq", "whole-answer", b"\x3f\x01" + framed(answer))
    write("client-doq", "bytewise-answer", b"\x00\x01" + framed(answer))
    write("client-doq", "ended-half-way", b"\x07\x01" + framed(answer)[: len(answer) // 2])
    write("client-doq", "longer-than-its-prefix", b"\x3f\x00" + framed(answer) + b"\x00\x0c")
    write("client-doq", "shorter-than-a-header", b"\x00\x01" + b"\x00\x05hello")

    write("proxy-request-head", "connect", "CONNECT www.example.com:443 HTTP/1.1\r\nHost: www.example.com:443\r\n"
          "Proxy-Authorization: Basic dTpw\r\nUser-Agent: curl/7.88.1\r\n\r\n\x16\x03\x01")
    write("proxy-request-head", "forward", "GET http://WWW.Example.com:8080/a/b?c=d#frag HTTP/1.1\r\nHost: www.example.com:8080\r\n"
          "Proxy-Connection: keep-alive\r\nAccept: */*\r\n\r\n")
    write("proxy-request-head", "forward-v6-body", "POST http://[2001:DB8::1]/submit HTTP/1.0\r\nContent-Length: 5\r\n"
          "X-Empty:\r\n\r\nhello")
    write("proxy-request-head", "connect-v4", "CONNECT 192.0.2.1:8443 HTTP/1.1\r\n\r\n")
    write("proxy-request-head", "smuggle", "POST http://a.test/ HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n")
    write("proxy-request-head", "bare-lf", "GET http://a.test/ HTTP/1.1\nHost: a.test\n\n")
    write("proxy-request-head", "https", "GET https://a.test/ HTTP/1.1\r\n\r\n")

    write("forwarded-for", "v4", "10.0.0.0/8,192.168.0.0/16\n10.0.0.1\n203.0.113.7, 192.168.1.1")
    write("forwarded-for", "v6-port", "::1/128,2001:db8::/32\n::1\n198.51.100.1:5000,[2001:db8::7]:443")
    write("cidr-list", "carrier", "# carrier A\r\n1.0.1.0/24\r\n\r\n240e::/20  # v6\n192.0.2.7\n::ffff:10.0.0.0/104\n")
    write("cidr-list", "nested", "10.0.0.0/8\n10.1.0.0/16\n10.1.2.3/32\n2001:db8::/32\n2001:db8:0:1::1/128\n0.0.0.0/0\n::/0\n")
    write("cidr-list", "bad-bits", "10.0.0.0/8\n10.0.0.1/8\n")
    write("ticket-keys", "two", "# encrypting key first\r\nHyYtNDtCSVBXXmVsc3qBiI+WnaSrsrnAx87V3OPq8fj/Bg0UGyIpMDc+RUxTWmFob3Z9hIuSmaCnrrW8w8rR2N/m7fT7AgkQFx4lLDM6QUg=\n\n  PkVMU1phaG92fYSLkpmgp661vMPK0djf5u30+wIJEBceJSwzOkFIT1ZdZGtyeYCHjpWco6qxuL/GzdTb4unw9/4FDBMaISgvNj1ES1JZYGc=  \n")
    write("ticket-keys", "same-name", "HyYtNDtCSVBXXmVsc3qBiI+WnaSrsrnAx87V3OPq8fj/Bg0UGyIpMDc+RUxTWmFob3Z9hIuSmaCnrrW8w8rR2N/m7fT7AgkQFx4lLDM6QUg=\nHyYtNDtCSVBXXmVsc3qBiI+WnaSrsrnAx87V3OPq8fj/Bg0UGyIpMDc+RUxTWmFob3Z9hIuSmaCnrrW8w8rR2N/m7fT7AgkQFx4lLDM6QUg=\n")
    write("ticket-keys", "short", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n")
    write("forwarded-for", "unknown", "10.0.0.0/8\n10.0.0.1\nunknown, 10.1.2.3\n203.0.113.9")

    entry = ('{"addresses":["198.51.100.1","2001:db8::5"],"family":"both","host":"p1.example","origin":"httpdns",'
             '"source":"p","storedAt":1767225600,"ttl":600}')
    planted = ('{"addresses":["127.0.0.1"],"family":"ipv4","host":"bank.example.com","origin":"httpdns","source":"p",'
               '"storedAt":1767225600,"ttl":600},'
               '{"addresses":["10.0.0.5","0.0.0.0"],"family":"ipv4","host":"intranet","origin":"httpdns","source":"p",'
               '"storedAt":1767225600,"ttl":600},'
               '{"addresses":["198.51.100.9"],"family":"ipv4","host":"huge.example","origin":"httpdns","source":"p",'
               '"storedAt":1767225600,"ttl":9223372036854775807}')
    for name, body in [("good", '{"entries":[%s]}' % entry), ("planted", '{"entries":[%s,%s]}' % (entry, planted))]:
        data = body.encode()
        header = b"swift-httpdns-cache 2 sha256 " + hashlib.sha256(data).hexdigest().encode() + b"\n"
        write("cache-file", name, b"\0" + header + data)
        write("cache-file", name + "-body", b"\0" + data)

    # POST /report bodies (the wire contract's example and its edges) and Authorization headers.
    item = '{"host":"www.example.test","address":"192.0.2.1","port":443,"error":"connect-timeout","time":1796300000}'
    write("report-body", "example", '{"reports":[' + item + ']}')
    write("report-body", "every-class", '{"reports":[' + ",".join(
        '{"host":"A.Example.Test.","address":"%s","port":%d,"error":"%s","time":0}' % (address, port, error)
        for address, port, error in [("2001:db8::1", 1, "connect-refused"), ("::ffff:192.0.2.7", 65535, "tls-verification"),
                                     ("192.0.2.2", 80, "tls-handshake"), ("192.0.2.3", 8443, "unreachable"), ("192.0.2.4", 443, "reset")]) + ']}')
    write("report-body", "fifty", '{"reports":[' + ",".join([item] * 50) + ']}')
    write("report-body", "fifty-one", '{"reports":[' + ",".join([item] * 51) + ']}')
    write("report-body", "unknown-member", '{"reports":[' + item[:-1] + ',"x":1}]}')
    write("report-body", "escaped-host", '{"reports":[{"host":"www.ex\\u0061mple.test","address":"192.0.2.1","port":443,"error":"reset","time":1}]}')
    write("report-body", "bearer", "Bearer abc.DEF-_~+/=")
    write("report-body", "signed", "HTTPDNS-HMAC-SHA256 account=100000, expires=1796300600, signature=" + "0a" * 32)


    # TSIG keys (issue 24): the -y forms and a BIND key clause as tsig-keygen prints it.
    secret = "nrlFzrWOJ5SxpTUBZnRDCFA1MfaLoabL+rNBXYHm9Nk="
    write("tsig-key", "dig-y", "hmac-sha256:xfr-key.example.:" + secret)
    write("tsig-key", "name-alg-secret", "xfr-key.example:hmac-sha256:" + secret)
    write("tsig-key", "bind-clause", 'key "xfr-key.example" {\n\talgorithm hmac-sha256;\n\tsecret "%s";\n};\n' % secret)

    # Zone transfers: a choice byte (0 AXFR, 1 IXFR from serial 1), then TCP-framed messages. The
    # TSIG-signed AXFR of Tests/HTTPDNSCoreTests/TSIGVectors.swift, and hand-built unsigned streams.
    def frame(message):
        return struct.pack(">H", len(message)) + message

    signed = [bytes.fromhex(m) for m in (
        "123484000001000200000001076578616d706c6503636f6d0000fc0001c00c0006000100000e100027036e7331c00c0a686f73746d6173746572c00c78a3f17500000e1000000258000151800000012c03777777c00c000100010000012c0004c0000201077866722d6b6579076578616d706c650000fa00ff00000000003d0b686d61632d7368613235360000006553f101012c002099c6b1a9a28c5892691149811c1010abd472367d39bc6350c9ea0abba7e0cd6b123400000000",
        "123484000000000100000000046d61696c076578616d706c6503636f6d00000100010000012c0004c0000202",
        "12348400000000020000000103667470076578616d706c6503636f6d00000100010000012c0004c0000203076578616d706c6503636f6d000006000100000e10003d036e7331076578616d706c6503636f6d000a686f73746d6173746572076578616d706c6503636f6d0078a3f17500000e1000000258000151800000012c077866722d6b6579076578616d706c650000fa00ff00000000003d0b686d61632d7368613235360000006553f102012c002046fdd41468c3ae1142b023e2319177264138e93492b28b24db0eb394f7ac5789123400000000",
    )]
    write("zone-transfer", "axfr-tsig-vectors", b"\0" + b"".join(frame(m) for m in signed))
    write("zone-transfer", "ixfr-tsig-vectors", b"\1" + b"".join(frame(m) for m in signed))

    def soa(serial):
        rdata = dns_name("ns1.example.com") + dns_name("ns1.example.com") + struct.pack(">5I", serial, 1, 1, 1, 1)
        return dns_name("example.com") + struct.pack(">HHIH", 6, 1, 60, len(rdata)) + rdata

    def a_record(name, last):
        return dns_name(name) + struct.pack(">HHIH", 1, 1, 60, 4) + bytes([192, 0, 2, last])

    def transfer(qtype, records, question=True):
        header = struct.pack(">HHHHHH", 0x1234, 0x8400, 1 if question else 0, len(records), 0, 0)
        body = dns_name("example.com") + struct.pack(">HH", qtype, 1) if question else b""
        return header + body + b"".join(records)

    write("zone-transfer", "axfr-two-messages", b"\0" + frame(transfer(252, [soa(2), a_record("www.example.com", 1)]))
          + frame(transfer(252, [a_record("mail.example.com", 2), soa(2)], question=False)))
    write("zone-transfer", "ixfr-incremental", b"\1" + frame(transfer(251, [
        soa(3), soa(1), a_record("ns1.example.com", 1), soa(2), a_record("www.example.com", 3),
        soa(2), soa(3), a_record("ftp.example.com", 4), soa(3)])))
    write("zone-transfer", "ixfr-up-to-date", b"\1" + frame(transfer(251, [soa(1)])))

    # Zone copies on disk (issue 24): the header line with the body's SHA-256, then the zone as an
    # AXFR stream with ID 0.
    def copy(messages):
        body = b"".join(frame(m) for m in messages)
        return b"swift-httpdns-zone 1 sha256 " + hashlib.sha256(body).hexdigest().encode() + b"\n" + body

    def copy_message(records):
        return struct.pack(">HHHHHH", 0, 0x8400, 1, len(records), 0, 0) + dns_name("example.com") + struct.pack(">HH", 252, 1) + b"".join(records)

    write("zone-copy", "one-message", copy([copy_message([soa(7), a_record("www.example.com", 1), soa(7)])]))
    write("zone-copy", "two-messages", copy([copy_message([soa(8), a_record("www.example.com", 1)]),
                                            copy_message([a_record("mail.example.com", 2), soa(8)])]))

    # The stub's DNS front (issue 23): whole datagrams as clients send them, and what it must drop
    # or answer at once. The ID's low byte sets how many records the property answers with.
    def stub_query(host, rtype, qid=0xbe20, flags=0x0100, opt=None, qdcount=1):
        header = struct.pack(">HHHHHH", qid, flags, qdcount, 0, 0, 1 if opt is not None else 0)
        return header + dns_name(host) + struct.pack(">HH", rtype, 1) + (opt if opt is not None else b"")

    def stub_opt(size=1232, ttl=0, options=b""):
        return b"\0" + struct.pack(">HHIH", 41, size, ttl, len(options)) + options

    write("stub-front", "a", stub_query("www.example.com", 1))
    write("stub-front", "mixed-case-aaaa", stub_query("WwW.ExAmPlE.CoM", 28, qid=0x0102))
    write("stub-front", "many-no-edns", stub_query("www.example.com", 1, qid=0x01ff))
    write("stub-front", "many-edns-600", stub_query("www.example.com", 1, qid=0x40ff, opt=stub_opt(600)))
    write("stub-front", "do-cd-https", stub_query("www.example.com", 65, qid=0xff10, flags=0x0110, opt=stub_opt(4096, 0x8000)))
    write("stub-front", "ecs", stub_query("www.example.com", 1, opt=stub_opt(options=bytes([0, 8, 0, 7, 0, 1, 24, 0, 198, 51, 100]))))
    write("stub-front", "ecs-bad-bits", stub_query("www.example.com", 1, opt=stub_opt(options=bytes([0, 8, 0, 7, 0, 1, 23, 0, 198, 51, 101]))))
    write("stub-front", "edns-version-1", stub_query("www.example.com", 1, opt=stub_opt(4096, 0x00010000)))
    write("stub-front", "two-opt", struct.pack(">HHHHHH", 0xbe20, 0x0100, 1, 0, 0, 2) + dns_name("www.example.com")
          + struct.pack(">HH", 1, 1) + stub_opt() + stub_opt())
    write("stub-front", "update-opcode", stub_query("example.com", 6, flags=0x2800))
    write("stub-front", "response", stub_query("www.example.com", 1, flags=0x8180))
    write("stub-front", "qdcount-2", stub_query("www.example.com", 1, qdcount=2) + dns_name("b.example.com") + struct.pack(">HH", 1, 1))
    write("stub-front", "qdcount-0", struct.pack(">HHHHHH", 0xbe20, 0x0100, 0, 0, 0, 0))
    write("stub-front", "header-only-qdcount-1", struct.pack(">HHHHHH", 0xbeef, 0x0100, 1, 0, 0, 0))
    write("stub-front", "eleven-bytes", bytes(11))
    write("stub-front", "axfr", stub_query("example.com", 252))
    # A query carrying answer records: the property also answers with the input as an upstream's answer.
    chain = dns_answer("Www.Example.com", 1, [("www.example.com", 5, 60, dns_name("edge.example.net")),
                                             ("edge.example.net", 1, 30, bytes([192, 0, 2, 1]))])
    write("stub-front", "query-with-chain", struct.pack(">HH", 0x0203, 0x0100) + chain[4:])

    # The stub's persisted wire cache (issue 23): the header line with the body's SHA-256, a count,
    # then per entry flags, the wall-clock store time (a double) and a length-prefixed answer.
    def stub_cache(entries):
        body = struct.pack(">I", len(entries))
        for flags, message in entries:
            body += bytes([flags]) + struct.pack(">dH", 1_800_000_000.0, len(message)) + message
        return b"swift-httpdns-stub-cache 1 sha256 " + hashlib.sha256(body).hexdigest().encode() + b"\n" + body

    soa_rdata = dns_name("ns1.example.com") + dns_name("hostmaster.example.com") + struct.pack(">IIIII", 1, 3600, 600, 86400, 300)
    nxdomain = struct.pack(">HHHHHH", 0, 0x8183, 1, 0, 1, 0) + dns_name("gone.example.com") + struct.pack(">HH", 1, 1) \
        + dns_name("example.com") + struct.pack(">HHIH", 6, 1, 3600, len(soa_rdata)) + soa_rdata
    write("stub-cache", "empty", stub_cache([]))
    write("stub-cache", "three", stub_cache([(0, chain), (3 | 8, dns_answer("signed.example.com", 1, [("signed.example.com", 1, 60, bytes([192, 0, 2, 3]))])),
                                             (4, nxdomain)]))
    write("stub-cache", "truncated", stub_cache([(0, chain)])[:-3])

if __name__ == "__main__":
    main()
