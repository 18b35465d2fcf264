/// The man pages' generated parts (`httpdns help --man-options SUB`, `--man-config-keys SUB`,
/// `--man-section SUB TITLE`): pandoc markdown from the same option rows and help sections that
/// `--help` prints, so that a man page's OPTIONS, CONFIG KEYS and defaults cannot drift from the
/// parser (scripts/build-man.sh puts them in place of the pages' marker lines).
extension HelpText {
    /// Every option as a definition list: `**-X**, **\-\-request** *method*`, then its help.
    var manOptions: String {
        options.map { option in
            var term = option.short.map { "**-\($0)**, " } ?? ""
            term += "**" + HelpText.manEscape("--" + option.long) + "**"
            if let valueName = option.valueName { term += " *" + HelpText.manEscape(valueName) + "*" }
            return term + "\n:   " + HelpText.manEscape(option.help) + "\n"
        }.joined(separator: "\n")
    }

    /// The body of the section titled `title` (`EXIT STATUS`; `OVERVIEW` is the overview), each
    /// line a paragraph, or nil.
    func manSection(_ title: String) -> String? {
        guard let body = title == "OVERVIEW" ? overview : sections.first(where: { $0.title == title })?.body else { return nil }
        return body.split(separator: "\n").map { HelpText.manEscape(String($0)) }.joined(separator: "\n\n") + "\n"
    }

    /// `text` with every character pandoc's markdown could read as markup escaped (a help text is
    /// plain text: `*.example.com`, `[...]`, `<file>`, `$(…)` must come out as written).
    static func manEscape(_ text: String) -> String {
        var out = ""
        for character in text {
            if "\\`*_{}[]<>#+-!|~^$@\"'".contains(character) { out.append("\\") }
            out.append(character)
        }
        return out
    }
}

extension ConfigSection {
    /// Every key of the section as a definition list: the key, then its option (and whether it is
    /// a list), in the order of the option rows.
    var manKeys: String {
        options.compactMap { option in
            key(of: option).map { key in
                let list = listKeys[option.long] != nil ? " (a list, or one value)" : ""
                let value = option.takesValue ? "" : " (true or false)"
                return "**\(HelpText.manEscape(key))**\n:   " + HelpText.manEscape("--" + option.long) + list + value + "\n"
            }
        }.joined(separator: "\n")
    }
}

extension Command {
    /// The help of `name` (a subcommand, or `httpdns` for the tool itself).
    static func helpText(for name: String) -> HelpText? {
        switch name {
        case "httpdns": return ToolHelp.help
        case "resolve": return resolveHelp
        case "fetch": return fetchHelp
        case "check": return checkHelp
        case "serve": return serveHelp
        case "proxy": return proxyHelp
        case "stub": return stubHelp
        case "demo": return demoHelp
        default: return nil
        }
    }

    /// `httpdns help --man-options SUB`, `--man-config-keys serve|stub`, `--man-section SUB TITLE`:
    /// hidden (scripts/build-man.sh's input, not a user's), 64 for anything else.
    static func manHelp(_ arguments: [String]) -> Int32 {
        let config = ["serve": serveConfig, "stub": stubConfig]
        switch (arguments.first, arguments.count) {
        case ("--man-options", 2):
            if let help = helpText(for: arguments[1]) { return printHelp(help.manOptions) }
        case ("--man-config-keys", 2):
            if let section = config[arguments[1]] { return printHelp(section.manKeys) }
        case ("--man-section", 3):
            if let text = helpText(for: arguments[1])?.manSection(arguments[2]) { return printHelp(text) }
        default:
            break
        }
        Output.usage(UsageError("bad man page request '\(arguments.joined(separator: " "))'"))
        return ExitStatus.usage
    }
}
