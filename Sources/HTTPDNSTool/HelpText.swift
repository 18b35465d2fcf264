/// The `--help` text of one (sub)command, in swift-argument-parser's shape: OVERVIEW, USAGE,
/// ARGUMENTS, OPTIONS, then free-form sections. Options come from the same ``OptionSpec`` list the
/// parser uses.
struct HelpText: Sendable {
    var overview: String
    var usage: String
    var arguments: [(name: String, help: String)] = []
    var options: [OptionSpec]
    /// Extra sections (`EXIT STATUS`, `VERDICTS`, …) as (title, body).
    var sections: [(title: String, body: String)] = []

    /// Width the text is wrapped to.
    static let width = 100
    /// Column where option descriptions start.
    static let column = 30

    /// The `-h, --help` option every command has.
    static let helpOption = OptionSpec("help", short: "h", help: "Show help information.")

    var rendered: String {
        var out = "OVERVIEW: " + HelpText.wrap(overview, indent: 10, first: 10).dropFirst(10) + "\n\n"
        out += "USAGE: \(usage)\n"
        if !arguments.isEmpty {
            out += "\nARGUMENTS:\n"
            for argument in arguments { out += HelpText.entry(argument.name, argument.help) }
        }
        out += "\nOPTIONS:\n"
        for option in options { out += HelpText.entry(option.synopsis, option.help) }
        for section in sections {
            out += "\n\(section.title):\n"
            for paragraph in section.body.split(separator: "\n", omittingEmptySubsequences: false) {
                out += paragraph.isEmpty ? "\n" : HelpText.wrap(String(paragraph), indent: 2, first: 2) + "\n"
            }
        }
        return out
    }

    /// `  name        help…`, the help wrapped and aligned at ``column``.
    static func entry(_ name: String, _ help: String) -> String {
        let lead = "  " + name
        if lead.count + 2 <= column {
            let text = wrap(help, indent: column, first: column)
            return lead + text.dropFirst(lead.count) + "\n"
        }
        return lead + "\n" + wrap(help, indent: column, first: column) + "\n"
    }

    /// Wraps `text` at ``width``; the first line is indented `first` spaces, the others `indent`.
    static func wrap(_ text: String, indent: Int, first: Int) -> String {
        var lines: [String] = []
        var line = String(repeating: " ", count: first)
        var lineHasWord = false
        for word in text.split(separator: " ") {
            if lineHasWord, line.count + 1 + word.count > width {
                lines.append(line)
                line = String(repeating: " ", count: indent)
                lineHasWord = false
            }
            line += (lineHasWord ? " " : "") + word
            lineHasWord = true
        }
        lines.append(line)
        return lines.joined(separator: "\n")
    }
}

/// The help of the tool itself.
enum ToolHelp {
    static let version = "0.1.0"

    static let subcommands: [(name: String, help: String)] = [
        ("resolve", "Resolve host names over HTTPDNS and print addresses, TTL and source."),
        ("fetch", "Fetch a URL like curl, connecting to addresses from HTTPDNS (Host, SNI and certificate checks stay on the real name)."),
        ("check", "Compare LocalDNS with HTTPDNS for host names and report hijacking, with evidence."),
        ("serve", "Run an HTTPDNS server."),
        ("proxy", "Run a local HTTP proxy that resolves through HTTPDNS, for programs that know nothing of it."),
        ("stub", "Run a local DNS server (UDP, TCP) for every program on the host: A/AAAA over HTTPDNS, other types through DoH."),
        ("demo", "Run the demonstration."),
    ]

    /// The tool's own options and exit statuses (its man page takes them from here too).
    static let help = HelpText(
        overview: """
            Resolve names over HTTP(S) DNS services instead of a local resolver that may lie, \
            then use them: like dig and curl, protected from DNS hijacking.
            """,
        usage: "httpdns <subcommand> [<options>]",
        options: [OptionSpec("version", help: "Show the version."), HelpText.helpOption],
        sections: [("EXIT STATUS", exitStatus)])

    static var rendered: String {
        var out = "OVERVIEW: " + HelpText.wrap(help.overview, indent: 10, first: 10).dropFirst(10) + "\n\n"
        out += "USAGE: \(help.usage)\n\nOPTIONS:\n"
        for option in help.options { out += HelpText.entry(option.synopsis, option.help) }
        out += "\nSUBCOMMANDS:\n"
        for command in subcommands { out += HelpText.entry(command.name, command.help) }
        out += "\n  See 'httpdns help <subcommand>' for detailed help.\n"
        return out
    }

    /// Exit statuses shared by the subcommands' help.
    static let exitStatus = """
        0 success (for fetch: any HTTP status, as curl), 1 failure (resolution, connection, TLS) with one \
        'httpdns: error:' line on stderr, 64 bad usage.
        """
}
