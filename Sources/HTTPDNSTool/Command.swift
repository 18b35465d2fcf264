import HTTPDNSCore

/// The `httpdns` command: picks the subcommand and turns every error into its exit status and one
/// line on stderr. The subcommands live in `Command+<Name>.swift`.
enum Command {
    /// Runs the tool with `arguments` (without the program name) and returns the exit status.
    static func main(_ arguments: [String]) async -> Int32 {
        guard let first = arguments.first else {
            Output.usage(UsageError("missing subcommand (resolve, fetch, check, serve, proxy, stub, demo)"))
            return ExitStatus.usage
        }
        let rest = Array(arguments.dropFirst())
        switch first {
        case "-h", "--help":
            return printHelp(ToolHelp.rendered)
        case "help":
            return help(for: rest)
        case "--version", "version":
            return printHelp(ToolHelp.version + "\n")
        case "resolve":
            return await run("httpdns resolve") { try await resolve(rest) }
        case "fetch":
            return await run("httpdns fetch") { try await fetch(rest) }
        case "check":
            return await run("httpdns check") { try await check(rest) }
        case "serve":
            return await run("httpdns serve") { try await serve(rest) }
        case "proxy":
            return await run("httpdns proxy") { try await proxy(rest) }
        case "stub":
            return await run("httpdns stub") { try await stub(rest) }
        case "demo":
            if rest.contains("--help") || rest.contains("-h") { return printHelp(demoHelp.rendered) }
            return runDemoProgram(arguments: rest)
        default:
            let message = first.hasPrefix("-") ? "unknown option '\(first)'" : "unknown subcommand '\(first)'"
            Output.usage(UsageError(message + " (subcommands: resolve, fetch, check, serve, proxy, stub, demo)"))
            return ExitStatus.usage
        }
    }

    static let demoHelp = HelpText(
        overview: """
            Show a hijacked lookup and the protected one side by side, all on loopback: nginx serves the real \
            sites (two HTTPS names on one address, told apart by SNI, and a plain HTTP one) on 127.0.0.2 and an \
            ad page on 127.0.0.3; dnsmasq on 127.0.0.4 is a LocalDNS that sends the demo names to 127.0.0.3; \
            an HTTPDNS service on 127.0.0.5 knows the truth. Each URL is fetched the unprotected way and \
            through swift-httpdns, then checked for hijacking. Everything it starts is stopped on exit and on \
            Ctrl-C. Needs nginx-light, dnsmasq-base and openssl (`make demo` installs them). The demo is its \
            own program, `httpdns-demo`, installed next to `httpdns` (it carries test launchers the tool does \
            not); this subcommand runs it.
            """,
        usage: "httpdns demo",
        options: [HelpText.helpOption])

    /// `httpdns help [SUBCOMMAND]`.
    static func help(for arguments: [String]) -> Int32 {
        guard let name = arguments.first else { return printHelp(ToolHelp.rendered) }
        if name.hasPrefix("--man-") { return manHelp(arguments) }
        guard name != "httpdns", let help = helpText(for: name) else {
            Output.usage(UsageError("unknown subcommand '\(name)'"))
            return ExitStatus.usage
        }
        return printHelp(help.rendered)
    }

    static func printHelp(_ text: String) -> Int32 {
        do {
            try Output.stdout(.init(text.utf8))
            return ExitStatus.success
        } catch {
            return ExitStatus.failure
        }
    }

    /// Parses `arguments` for a subcommand; prints the help and returns nil for `-h`/`--help`.
    static func parse(_ arguments: [String], command: String, help: HelpText) throws(UsageError) -> ParsedArguments? {
        let parsed = try CommandLineParser(command: command, options: help.options).parse(arguments)
        if parsed.flag("help") {
            _ = printHelp(help.rendered)
            return nil
        }
        return parsed
    }

    /// A short, one-line account of a resolution failure: each attempt with its code and detail,
    /// without repeating the host (the caller names it).
    static func explain(_ error: HTTPDNSError) -> String {
        if !error.attempts.isEmpty {
            let attempts = error.attempts.map { "\($0.source): \($0.error.code): \($0.error.detail)" }
            return "\(error.detail) (" + attempts.joined(separator: "; ") + ")"
        }
        return "\(error.code)" + (error.source.map { " from \($0)" } ?? "") + ": \(error.detail)"
    }

    /// Runs a subcommand body and maps its errors: usage → 64 with a hint, anything else → 1 with one
    /// `httpdns: error:` line.
    static func run(_ command: String, _ body: () async throws -> Int32) async -> Int32 {
        do {
            return try await body()
        } catch let error as UsageError {
            Output.usage(error)
            return ExitStatus.usage
        } catch let error as ToolFailure {
            Output.error(error.message)
            return ExitStatus.failure
        } catch let error as HTTPDNSError {
            Output.error(explain(error))
            return ExitStatus.failure
        } catch {
            Output.error(String(describing: error))
            return ExitStatus.failure
        }
    }
}
