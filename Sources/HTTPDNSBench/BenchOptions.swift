/// Command-line options of `httpdns-bench`.
struct BenchOptions: Sendable {
    /// Fewer rounds and smaller loops, for smoke runs (figures are noisier). Default false.
    var quick = false
    /// Rows to run (1…9); empty runs every row. Default empty.
    var only: Set<Int> = []
    /// Where to write the figures as JSON. Default nil: table only.
    var jsonPath: String? = nil
    /// Internal: run only this row and write its figures to ``childOutput`` (see ``BenchChild``).
    var childRow: Int? = nil
    var childOutput: String? = nil

    static let allRows = 1...12

    static let usage = """
        OVERVIEW: what HTTPDNS protection costs, against baselines measured in the same run

        USAGE: httpdns-bench [--quick] [--only N[,N…]] [--json FILE]

        OPTIONS:
          --quick          fewer rounds and smaller loops (smoke runs; figures are noisier)
          --only N[,N…]    run only these rows of the table (1-12)
          --json FILE      also write every figure as JSON to FILE
          -h, --help       show this help

        Rows: 1 cache-hit lookup, 2 cold resolve per provider format, 3 10,000 concurrent lookups,
        4 URLSession + protocol, 5 direct client vs curl CLI, 6 64 MiB streamed upload,
        7 memory per cached host, 8 httpdns serve vs dnsdist (DoH, h2load; needs the Debian packages
        dnsdist and nghttp2-client), 9 loopback proxy (httpdns proxy vs plain URLSession, a direct
        download and tinyproxy; needs the Debian package tinyproxy), 10 httpdns serve with views and health
        checks vs the plain zone (h2load), 11 httpdns stub vs dnsdist's packet cache and Unbound (dnsperf;
        needs dnsdist, unbound and dnsperf), 12 httpdns serve's DNS over TLS vs dnsdist's (dnsperf -m dot;
        needs dnsdist and dnsperf). Exit status 1 names every missed target; 64 for bad usage.
        """

    struct UsageError: Error, CustomStringConvertible {
        var description: String
    }

    /// Parses the arguments after the program name.
    /// - Returns: nil when help was asked for.
    static func parse(_ arguments: [String]) throws(UsageError) -> BenchOptions? {
        var options = BenchOptions()
        var index = 0
        func value(_ name: String) throws(UsageError) -> String {
            index += 1
            guard index < arguments.count else { throw UsageError(description: "\(name) needs a value") }
            return arguments[index]
        }
        while index < arguments.count {
            let argument = arguments[index]
            switch argument {
            case "-h", "--help":
                return nil
            case "--quick":
                options.quick = true
            case "--json":
                options.jsonPath = try value(argument)
            case "--row-child":
                guard let row = Int(try value(argument)), allRows.contains(row) else {
                    throw UsageError(description: "--row-child takes a row number 1-\(allRows.upperBound)")
                }
                options.childRow = row
            case "--child-output":
                options.childOutput = try value(argument)
            case "--only":
                for part in try value(argument).split(separator: ",") {
                    guard let row = Int(part), allRows.contains(row) else {
                        throw UsageError(description: "--only takes row numbers 1-\(allRows.upperBound), got \(part)")
                    }
                    options.only.insert(row)
                }
            default:
                throw UsageError(description: "unknown argument \(argument)")
            }
            index += 1
        }
        return options
    }

    /// Whether `row` was selected.
    func runs(_ row: Int) -> Bool {
        only.isEmpty || only.contains(row)
    }
}
