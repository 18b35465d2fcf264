// swift-tools-version:6.2
// The Swift examples of the README and the DocC articles, each a complete program, built against
// this checkout of swift-httpdns exactly as an app would depend on the package (by URL in your own
// Package.swift; here by path). `make test` builds them, checks that the README or an article shows
// them verbatim, and runs them on loopback.
import PackageDescription

let package = Package(
    name: "swift-httpdns-examples",
    dependencies: [
        .package(name: "swift-httpdns", path: ".."),
    ],
    targets: [
        .executableTarget(
            name: "ProtectURLSession",
            dependencies: [.product(name: "HTTPDNSURLSession", package: "swift-httpdns")]
        ),
        .executableTarget(
            name: "DirectClient",
            dependencies: [.product(name: "HTTPDNSDirect", package: "swift-httpdns")]
        ),
        .executableTarget(
            name: "ProtectProcess",
            dependencies: [.product(name: "HTTPDNSLoopbackProxy", package: "swift-httpdns")]
        ),
        .executableTarget(
            name: "EmbedServer",
            dependencies: [.product(name: "HTTPDNSServer", package: "swift-httpdns")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
