extension Command {
    static let serveHelp = HelpText(
        overview: "Run an HTTPDNS server.",
        usage: "httpdns serve [<options>]",
        options: [HelpText.helpOption])

    /// `httpdns serve`.
    static func serve(_ arguments: [String]) async throws -> Int32 {
        guard try parse(arguments, command: "httpdns serve", help: serveHelp) != nil else { return ExitStatus.success }
        throw ToolFailure("serve: not built yet")
    }
}
