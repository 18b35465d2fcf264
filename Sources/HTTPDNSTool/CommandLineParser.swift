/// One option a subcommand accepts; the same list drives parsing and the OPTIONS section of `--help`,
/// so the two can never disagree.
struct OptionSpec: Sendable {
    /// The key the parsed value is stored under (the long name without dashes).
    var key: String
    /// `--long` spelling (without dashes).
    var long: String
    /// Optional one-letter `-x` spelling.
    var short: Character?
    /// Placeholder shown in help (`<kind=url>`); nil makes this a flag that takes no value.
    var valueName: String?
    /// One or two sentences for the help text.
    var help: String
    /// Whether SIGHUP reads this option's file again (a daemon's reload): the help says so, and the
    /// daemon checks at start that its reload handles exactly these rows.
    var reloads: Bool

    init(_ long: String, short: Character? = nil, value: String? = nil, reloads: Bool = false, help: String) {
        self.key = long
        self.long = long
        self.short = short
        self.valueName = value
        self.reloads = reloads
        // "Reloaded on SIGHUP." goes before the default (the last sentence), or at the end.
        if reloads, let last = help.ranges(of: " Default ").last {
            var text = help
            text.replaceSubrange(last, with: " Reloaded on SIGHUP. Default ")
            self.help = text
        } else {
            self.help = reloads ? help + " Reloaded on SIGHUP." : help
        }
    }

    var takesValue: Bool { valueName != nil }

    /// `-X, --request <method>` as shown in help.
    var synopsis: String {
        var text = short.map { "-\($0), " } ?? ""
        text += "--\(long)"
        if let valueName { text += " <\(valueName)>" }
        return text
    }
}

/// What the parser found: option values in the order given, and the positional arguments.
struct ParsedArguments: Sendable {
    private(set) var values: [String: [String]] = [:]
    private(set) var positionals: [String] = []

    mutating func add(_ key: String, _ value: String) { values[key, default: []].append(value) }
    mutating func addPositional(_ value: String) { positionals.append(value) }

    /// Whether a flag was given (any number of times).
    func flag(_ key: String) -> Bool { values[key] != nil }
    /// The last value of an option (later spellings override earlier ones, as in curl).
    func last(_ key: String) -> String? { values[key]?.last }
    /// Every value of a repeatable option, in order.
    func all(_ key: String) -> [String] { values[key] ?? [] }
    /// Whether the option was given at all.
    func has(_ key: String) -> Bool { values[key] != nil }
}

/// A command line that cannot be run as written: exit status 64 (`EX_USAGE`) with a hint to `--help`.
struct UsageError: Error, Sendable, CustomStringConvertible {
    /// What is wrong, one line.
    var message: String
    /// The command whose `--help` the hint names (`httpdns fetch`).
    var command: String

    init(_ message: String, command: String = "httpdns") {
        self.message = message
        self.command = command
    }

    var description: String { message }
}

/// A hand-written parser in swift-argument-parser's conventions (no dependency on it):
/// `--name value`, `--name=value`, `-x value`, `-xvalue`, bundled short flags (`-iL`), `--` ends
/// options, and options may come before or after positional arguments.
struct CommandLineParser: Sendable {
    let command: String
    let options: [OptionSpec]

    init(command: String, options: [OptionSpec]) {
        self.command = command
        self.options = options
    }

    /// Parses `arguments` (without the program and subcommand names).
    /// - Throws: ``UsageError`` for an unknown option, a missing value, or a value given to a flag.
    func parse(_ arguments: [String]) throws(UsageError) -> ParsedArguments {
        var result = ParsedArguments()
        var index = 0
        func nextValue(for name: String) throws(UsageError) -> String {
            index += 1
            guard index < arguments.count else { throw usage("missing value for '\(name)'") }
            return arguments[index]
        }
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "--" {
                for rest in arguments[(index + 1)...] { result.addPositional(rest) }
                break
            } else if argument.hasPrefix("--") {
                let body = argument.dropFirst(2)
                let name = body.split(separator: "=", maxSplits: 1).first.map(String.init) ?? ""
                guard let spec = options.first(where: { $0.long == name }) else {
                    throw usage("unknown option '--\(name)'")
                }
                if let equals = body.firstIndex(of: "=") {
                    guard spec.takesValue else { throw usage("option '--\(name)' takes no value") }
                    result.add(spec.key, String(body[body.index(after: equals)...]))
                } else if spec.takesValue {
                    result.add(spec.key, try nextValue(for: "--\(name)"))
                } else {
                    result.add(spec.key, "")
                }
            } else if argument.hasPrefix("-"), argument.count > 1 {
                var letters = Substring(argument.dropFirst())
                while let letter = letters.first {
                    letters = letters.dropFirst()
                    guard let spec = options.first(where: { $0.short == letter }) else {
                        throw usage("unknown option '-\(letter)'")
                    }
                    if spec.takesValue {
                        result.add(spec.key, letters.isEmpty ? try nextValue(for: "-\(letter)") : String(letters))
                        break
                    }
                    result.add(spec.key, "")
                }
            } else {
                result.addPositional(argument)
            }
            index += 1
        }
        return result
    }

    /// A usage error naming this parser's command.
    func usage(_ message: String) -> UsageError {
        UsageError(message, command: command)
    }
}
