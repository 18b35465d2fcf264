// swift-tools-version:6.2
// Swift 6.2 or newer: the engine starts cache-miss lookups with `Task.immediate` (SE-0472). Linux only:
// the transport is libcurl, the server h2o, the watchers rtnetlink; nothing is built or
// tested on Apple platforms, so none is declared.
//
// The layout follows the path of one request:
//   HTTPDNSURLProtocol → HTTPDNS (engine: cache, providers, fallback) → HTTPDNSTransport (libcurl, sockets)
// with pure value modules (DNSWire, HTTPDNSCore) underneath that do no I/O. The service side is cut
// along its daemons (issue 31): the HTTP shell (HTTPServing), the service (HTTPDNSServer), zone
// transfers and fleet state (HTTPDNSFleet) and the stub (HTTPDNSStub), over pure modules
// (DNSZoneTransfer, DNSStubCore) and what they share to be run (HTTPDNSOperations); arrows point down.
import PackageDescription

let package = Package(
    name: "swift-httpdns",
    products: [
        .library(name: "HTTPDNS", targets: ["HTTPDNS"]),
        .library(name: "HTTPDNSDirect", targets: ["HTTPDNSDirect"]),
        .library(name: "HTTPDNSLoopbackProxy", targets: ["HTTPDNSLoopbackProxy"]),
        .library(name: "HTTPDNSURLSession", targets: ["HTTPDNSURLSession"]),
        .library(name: "HTTPDNSNetworking", targets: ["HTTPDNSNetworking"]),
        .library(name: "HTTPDNSServer", targets: ["HTTPDNSServer"]),
        .executable(name: "httpdns", targets: ["HTTPDNSTool"]),
        .executable(name: "httpdns-demo", targets: ["HTTPDNSDemo"]),
        .executable(name: "httpdns-bench", targets: ["HTTPDNSBench"]),
    ],
    targets: [
        // C libraries from Debian packages, with small shims for their variadic calls.
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        .systemLibrary(
            name: "CCrypto",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        // libssl's TLS client (Debian libssl-dev), for the stub's DNS-over-TLS upstreams: each
        // non-blocking step behind one inline function (Swift does not import OpenSSL's macros).
        .systemLibrary(
            name: "CTLSClient",
            pkgConfig: "libssl",
            providers: [.apt(["libssl-dev"])]
        ),
        // h2o's evloop library (HTTP/1.1, HTTP/2, TLS with ALPN) behind a narrow C face of our own:
        // Swift never imports h2o's headers (see Sources/CH2O/include/httpdns_h2o.h).
        .target(
            name: "CH2O",
            dependencies: ["CSockets"],
            // vendor/: klib's khash.h as h2o 2.2.5 bundles it (deps/klib), which h2o/http2_internal.h
            // includes but Debian's libh2o-dev does not ship (see httpdns_h2o_drain.c).
            cSettings: [.define("H2O_USE_EPOLL", to: "1"), .headerSearchPath("vendor")],
            linkerSettings: [.linkedLibrary("h2o-evloop"), .linkedLibrary("ssl"), .linkedLibrary("crypto")]
        ),

        // ngtcp2 (QUIC) with its GnuTLS crypto back end, as Debian builds them, behind a narrow C face
        // of our own for DNS over QUIC (RFC 9250): see Sources/CQUIC/include/httpdns_quic.h.
        .target(
            name: "CQUIC",
            linkerSettings: [.linkedLibrary("ngtcp2"), .linkedLibrary("ngtcp2_crypto_gnutls"), .linkedLibrary("gnutls")]
        ),

        // libmaxminddb (MaxMind DB files: the server's views by country and ASN).
        .systemLibrary(
            name: "CMaxMindDB",
            pkgConfig: "libmaxminddb",
            providers: [.apt(["libmaxminddb-dev"])]
        ),

        // hiredis (Redis, Debian libhiredis-dev): the fleet's shared report state (`httpdns serve --redis`).
        // No pkgConfig: hiredis.pc's cflags carry -D_FILE_OFFSET_BITS=64, which SwiftPM refuses
        // with a warning on every build; the shim includes <hiredis/hiredis.h> instead.
        .systemLibrary(name: "CHiredis"),

        // Linux rtnetlink headers, for the network-change watcher.
        .systemLibrary(name: "CNetlink"),

        // Pure values: no sockets, no files, no clocks of their own.
        .target(name: "DNSWire"),
        .target(name: "HTTPDNSCore", dependencies: ["DNSWire", "CCrypto"]),
        // The DNS protocol codecs of zone transfers, beside the wire code: TSIG records and signing,
        // AXFR/IXFR, NOTIFY, the zone copy on disk (HTTPDNSCore only for its digests and HMAC).
        .target(name: "DNSZoneTransfer", dependencies: ["DNSWire", "HTTPDNSCore", "CCrypto"]),
        // The stub's values (`httpdns stub`): wire and packet caches, the front's checks, rate
        // limiter, upstream ranking and health, hosts, routes, resolv.conf; each takes `now:`.
        .target(name: "DNSStubCore", dependencies: ["DNSWire", "HTTPDNSCore"]),

        // I/O: libcurl (HTTP to providers and origins).
        .target(name: "HTTPDNSTransport", dependencies: ["CCurl", "HTTPDNSCore"]),
        // I/O: plain DNS over UDP/TCP sockets and the system resolver (getaddrinfo).
        .target(name: "DNSSockets", dependencies: ["DNSWire", "HTTPDNSCore", "DNSZoneTransfer"]),

        // The resolution engine: cache, providers in order, LocalDNS fallback.
        .target(
            name: "HTTPDNS",
            dependencies: [
                "DNSWire", "HTTPDNSCore", "HTTPDNSTransport", "DNSSockets",
                .target(name: "CNetlink", condition: .when(platforms: [.linux])),
            ]
        ),

        // Linux calls of the loopback proxy's event loop (epoll, splice) that Glibc does not import.
        .target(name: "CHTTPDNSProxy"),
        // Socket calls Glibc does not import: sendmmsg (the stub's UDP answers, sent in batches) and
        // the BPF filter that refuses new connections at a draining listener (h2o's and the stub's).
        .target(name: "CSockets"),

        // The three routes, a module each (a change to one shows what it can break in another):
        // IP direct connect for code you write: `HTTPDNSClient`, connection racing, and the one
        // failover (`HTTPDNSConnector`) the proxy uses too.
        .target(name: "HTTPDNSDirect", dependencies: ["HTTPDNSCore", "HTTPDNS", "HTTPDNSTransport"]),
        // The loopback proxy for code you cannot change (`https_proxy`, `startForProcess`).
        .target(name: "HTTPDNSLoopbackProxy", dependencies: ["HTTPDNSCore", "HTTPDNS", "HTTPDNSTransport", "HTTPDNSDirect", "CHTTPDNSProxy"]),
        // The URLProtocol route, opt-in: the only module that touches swift-corelibs-foundation's
        // internals (Corelibs/), checked once at installation.
        .target(name: "HTTPDNSURLSession", dependencies: ["HTTPDNSCore", "HTTPDNS", "HTTPDNSDirect"]),
        // The umbrella: the direct client and the proxy (not the URL protocol).
        .target(name: "HTTPDNSNetworking", dependencies: ["HTTPDNSDirect", "HTTPDNSLoopbackProxy"]),

        // The HTTP shell over h2o's event loop (HTTP/1.1 and HTTP/2, TLS, PROXY protocol, drains):
        // no DNS in it. `httpdns serve` answers on it; the stub serves its metrics on it.
        .target(name: "HTTPServing", dependencies: ["CH2O", "CQUIC", "HTTPDNSCore"]),

        // What the daemons share to be run: the line log writer (access and query logs), one
        // Prometheus text writer, IP networks and the longest-prefix table.
        .target(name: "HTTPDNSOperations", dependencies: ["HTTPDNSCore"]),

        // `httpdns stub`, the local DNS resolver daemon: UDP and TCP fronts, upstream groups, its
        // caches' persistence, metrics on the HTTP shell. Never links the service.
        .target(
            name: "HTTPDNSStub",
            dependencies: [
                "CQUIC", "CSockets", "CTLSClient", "DNSSockets", "DNSStubCore", "DNSWire", "HTTPDNSCore", "HTTPDNS", "HTTPDNSTransport", "HTTPDNSOperations",
                "HTTPServing",
            ]
        ),

        // Zone transfers and fleet state: the secondary zones a server follows (SOA timers, NOTIFY,
        // copies on disk) and report sharing over Redis. It feeds the service through HTTPDNSZoneSink
        // and never imports it.
        .target(name: "HTTPDNSFleet", dependencies: ["CHiredis", "DNSSockets", "DNSWire", "DNSZoneTransfer", "HTTPDNSCore"]),

        // The self-hostable HTTPDNS server.
        .target(name: "HTTPDNSServer", dependencies: ["HTTPServing", "HTTPDNSOperations", "HTTPDNSFleet", "CMaxMindDB", "DNSSockets", "DNSWire", "DNSZoneTransfer", "HTTPDNSCore", "HTTPDNS", "HTTPDNSTransport"]),

        // The `httpdns` command: resolve, fetch, check, serve (and `demo`, which runs httpdns-demo).
        // It links no test code.
        .executableTarget(
            name: "HTTPDNSTool",
            dependencies: [
                "DNSWire", "HTTPDNSCore", "DNSZoneTransfer", "DNSStubCore", "HTTPDNSTransport", "DNSSockets", "HTTPDNS", "HTTPDNSNetworking",
                "HTTPDNSURLSession", "HTTPServing", "HTTPDNSOperations", "HTTPDNSFleet", "HTTPDNSServer", "HTTPDNSStub",
            ]
        ),

        // `make demo`: starts nginx, dnsmasq and a private CA with the launchers the tests use.
        .executableTarget(
            name: "HTTPDNSDemo",
            dependencies: ["HTTPDNSCore", "HTTPDNSTransport", "HTTPDNS", "HTTPDNSNetworking", "HTTPDNSURLSession", "HTTPServing", "HTTPDNSServer", "HTTPDNSTestSupport"]
        ),

        // `make bench`: what protection costs, against baselines measured in the same run.
        .executableTarget(
            name: "HTTPDNSBench",
            dependencies: [
                "DNSWire", "HTTPDNSCore", "HTTPDNSTransport", "DNSSockets", "HTTPDNS", "HTTPDNSNetworking", "HTTPDNSURLSession", "HTTPServing",
                "HTTPDNSServer", "HTTPDNSStub", "HTTPDNSTestSupport",
            ]
        ),

        // Test support: a program the network-namespace tests run inside their namespaces
        // (rtnetlink watcher, `.auto` family and NAT64). Not a product.
        .executableTarget(
            name: "HTTPDNSNetnsAgent",
            dependencies: ["HTTPDNSCore", "HTTPDNS", "HTTPDNSServer", "HTTPDNSNetworking", "HTTPDNSTestSupport"]
        ),

        // The fuzz targets' properties (not a product): `make fuzz` links them into libFuzzer binaries
        // (Fuzz/), and HTTPDNSFuzzTargetsTests replays every corpus under `make test`.
        .target(
            name: "HTTPDNSFuzzTargets",
            dependencies: [
                "CQUIC", "DNSWire", "HTTPDNSCore", "DNSZoneTransfer", "DNSStubCore", "HTTPDNSTransport", "HTTPDNS", "HTTPServing", "HTTPDNSOperations", "HTTPDNSServer", "HTTPDNSNetworking",
                "HTTPDNSLoopbackProxy",
            ]
        ),

        // The differential suite's scenarios and routes (issue 8), and the runner that executes one
        // scenario through one route in a child process (`HTTPDNSDifferentialRunner`, test-only, no product).
        .target(
            name: "HTTPDNSDifferential",
            dependencies: ["HTTPDNSNetworking", "HTTPDNSURLSession", "HTTPDNS", "HTTPDNSCore", "HTTPDNSTransport", "CCrypto"]
        ),
        .executableTarget(name: "HTTPDNSDifferentialRunner", dependencies: ["HTTPDNSDifferential"]),

        // A test helper (not a product): plain URLSession code in its own process, for the proxy
        // tests (the proxy environment it reads is process-wide).
        .executableTarget(
            name: "HTTPDNSURLSessionProbe",
            dependencies: ["HTTPDNS", "HTTPDNSCore", "HTTPDNSNetworking"],
            path: "Tests/HTTPDNSURLSessionProbe"
        ),

        // Helpers the test suites share: loopback servers, dnsmasq, nginx, certificates. Over the HTTP
        // shell only, so that a client's or a stub's test never links the service.
        .target(name: "HTTPDNSTestSupport", dependencies: ["HTTPServing", "HTTPDNSCore", "DNSWire", "CCrypto"]),
        // The loopback proxy's lying network with the project's own HTTPDNS service (proxy and tool tests).
        .target(
            name: "HTTPDNSProxyTestBed",
            dependencies: ["HTTPDNSTestSupport", "HTTPDNSServer", "HTTPDNSCore"],
            path: "Tests/HTTPDNSProxyTestBed"
        ),

        .testTarget(name: "DNSWireTests", dependencies: ["DNSWire"], resources: [.copy("Fixtures")]),
        .testTarget(name: "HTTPDNSCoreTests", dependencies: ["HTTPDNSCore", "DNSWire", "HTTPDNSTestSupport"]),
        .testTarget(name: "DNSZoneTransferTests", dependencies: ["DNSZoneTransfer", "HTTPDNSCore", "DNSWire", "HTTPDNSTestSupport"]),
        .testTarget(name: "DNSStubCoreTests", dependencies: ["DNSStubCore", "HTTPDNSCore", "DNSWire", "HTTPDNSTestSupport"]),
        .testTarget(name: "HTTPDNSTransportTests", dependencies: ["HTTPDNSTransport", "HTTPServing", "HTTPDNSTestSupport"]),
        .testTarget(name: "DNSSocketsTests", dependencies: ["DNSSockets", "DNSWire", "DNSZoneTransfer", "HTTPDNSCore", "HTTPDNSTestSupport"]),
        .testTarget(
            name: "HTTPDNSTests",
            dependencies: ["HTTPDNS", "HTTPDNSCore", "DNSWire", "HTTPDNSTransport", "HTTPServing", "HTTPDNSTestSupport"]
        ),
        .testTarget(
            name: "HTTPDNSURLProtocolTests",
            dependencies: ["HTTPDNSNetworking", "HTTPDNSURLSession", "HTTPDNSDirect", "HTTPDNS", "HTTPDNSCore", "HTTPDNSTransport", "HTTPServing", "HTTPDNSServer", "HTTPDNSTestSupport"]
        ),
        .testTarget(
            name: "HTTPDNSProxyTests",
            dependencies: [
                "HTTPDNSNetworking", "HTTPDNSLoopbackProxy", "HTTPDNSDirect", "HTTPDNS", "HTTPDNSCore", "HTTPDNSTransport", "HTTPDNSServer", "DNSSockets",
                "HTTPDNSTestSupport", "HTTPDNSProxyTestBed",
            ]
        ),
        .testTarget(
            name: "HTTPDNSAcceptanceTests",
            dependencies: [
                "HTTPDNSNetworking", "HTTPDNSDirect", "HTTPDNSURLSession", "HTTPDNS", "HTTPDNSCore", "HTTPDNSTransport", "HTTPServing", "HTTPDNSServer", "DNSSockets",
                "HTTPDNSTestSupport",
            ]
        ),
        .testTarget(name: "HTTPDNSFuzzTargetsTests", dependencies: ["HTTPDNSFuzzTargets", "HTTPDNSCore"]),
        .testTarget(
            name: "HTTPDNSDifferentialTests",
            dependencies: ["HTTPDNSDifferential", "HTTPDNSNetworking", "HTTPDNSURLSession", "HTTPDNS", "HTTPDNSCore", "HTTPServing", "HTTPDNSServer", "HTTPDNSTestSupport"]
        ),
        .testTarget(
            name: "HTTPDNSToolTests",
            dependencies: ["HTTPDNSTestSupport", "HTTPDNSProxyTestBed", "HTTPDNS", "HTTPDNSCore", "HTTPServing", "HTTPDNSFleet", "HTTPDNSServer", "DNSWire", "DNSZoneTransfer", "DNSStubCore"]
        ),
        .testTarget(name: "HTTPServingTests", dependencies: ["HTTPServing", "HTTPDNSCore", "HTTPDNSTestSupport"]),
        .testTarget(name: "HTTPDNSOperationsTests", dependencies: ["HTTPDNSOperations", "HTTPDNSCore"]),
        .testTarget(
            name: "HTTPDNSFleetTests",
            dependencies: ["HTTPDNSFleet", "DNSZoneTransfer", "DNSSockets", "DNSWire", "HTTPDNSCore", "HTTPDNSTestSupport"]
        ),
        .testTarget(
            name: "HTTPDNSStubTests",
            dependencies: ["HTTPDNSStub", "DNSStubCore", "HTTPDNS", "HTTPDNSCore", "HTTPDNSTransport", "DNSWire", "HTTPDNSTestSupport"]
        ),
        .testTarget(name: "HTTPDNSServerTests", dependencies: ["HTTPDNSServer", "HTTPServing", "HTTPDNSOperations", "HTTPDNSFleet", "HTTPDNSCore", "DNSWire", "DNSZoneTransfer", "HTTPDNS", "HTTPDNSTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
