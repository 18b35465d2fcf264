extension Command {
    static let fetchHelp = HelpText(
        overview: "Fetch a URL.",
        usage: "httpdns fetch [<options>] <url>",
        options: [HelpText.helpOption])

    /// `httpdns fetch`.
    static func fetch(_ arguments: [String]) async throws -> Int32 {
        guard try parse(arguments, command: "httpdns fetch", help: fetchHelp) != nil else { return ExitStatus.success }
        throw ToolFailure("fetch: not built yet")
    }
}
