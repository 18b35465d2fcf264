#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Foundation

/// The demonstration (`httpdns-demo`, run by `make demo`): a hijacked lookup and the protected one,
/// side by side, on loopback only.
///
/// It starts nginx (the real origin, two HTTPS sites told apart by SNI plus a plain HTTP one), a
/// hijacker serving an ad page on another loopback address, dnsmasq as a LocalDNS that points the demo
/// names at the hijacker, and an HTTPDNS service with the true zone. For each URL it fetches once the
/// way an unprotected app would (LocalDNS's address) and once through swift-httpdns, then runs the
/// hijack check. Everything is stopped on exit, on error and on Ctrl-C.
///
/// Its own executable, apart from `httpdns`: it links the nginx, dnsmasq and private-CA launchers of
/// the test support, which the shipped tool must not carry.
func runDemo(arguments: [String]) async -> Int32 {
    if arguments.contains("--help") || arguments.contains("-h") {
        DemoOutput.line(DemoOutput.help)
        return 0
    }
    guard arguments.isEmpty else {
        DemoOutput.error("demo takes no arguments")
        DemoOutput.diagnostic("Run 'httpdns-demo --help' for usage.")
        return 64
    }
    DemoOutput.line("swift-httpdns demo: DNS hijacking and IP direct connect, all on loopback (nothing leaves this machine)\n")

    // Signals are watched first, so that Ctrl-C during start-up also stops what already runs.
    let cleanup = DemoCleanup()
    let interrupts = [SIGINT, SIGTERM].map { number -> any DispatchSourceSignal in
        signal(number, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
        source.setEventHandler {
            cleanup.run()
            DemoOutput.diagnostic("\ninterrupted: everything the demo started has been stopped")
            exit(128 + number)
        }
        source.resume()
        return source
    }
    defer {
        cleanup.run()
        interrupts.forEach { $0.cancel() }
    }
    let bed: DemoBed
    do {
        bed = try DemoBed(cleanup: cleanup) { step in DemoOutput.line("  · \(step)") }
    } catch {
        DemoOutput.error("could not start its servers: \(error)")
        return 1
    }

    let demo = DemoRun(bed: bed)
    DemoOutput.line("")
    for url in bed.urls {
        await demo.compare(url)
    }
    DemoProxyScene.run(bed: bed, cleanup: cleanup)
    DemoStubScene.run(bed: bed, cleanup: cleanup)
    DemoServiceScene.run(cleanup: cleanup)
    DemoOutput.line("""
        What happened: the lying LocalDNS sent every demo name to the hijacker at \(DemoBed.hijacker). Unprotected, \
        HTTPS fails (the hijacker cannot show a valid certificate) and plain HTTP silently shows the ad page. \
        Protected, swift-httpdns asked HTTPDNS, connected to \(DemoBed.origin), and still sent the real name \
        in Host and TLS SNI and verified the certificate for it.
        """)
    cleanup.run()
    DemoOutput.line("Everything the demo started has been stopped.")
    return 0
}

exit(await runDemo(arguments: Array(CommandLine.arguments.dropFirst())))
