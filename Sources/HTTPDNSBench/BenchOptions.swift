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
    /// `--load UPSTREAM`: instead of the table, one run of the DoQ/DoT load client
    /// (``EncryptedDNSLoad``) against that server, its figures printed.
    var load: LoadOptions? = nil

    /// The load client's settings (`--load` and the options after it).
    struct LoadOptions: Sendable {
        /// `doq=IP[:PORT]#NAME` or `dot=IP[:PORT]#NAME`.
        var upstream: String
        /// A PEM CA file that verifies the server (`--cacert`); nil: the system's CAs.
        var caFile: String? = nil
        /// Connections (`--connections`). Default 16.
        var connections = 16
        /// Queries in flight in all (`--outstanding`). Default 256.
        var outstanding = 256
        /// Seconds of load (`--seconds`). Default 2.
        var seconds = 2.0
        /// The name asked, type A (`--name`). Default `a.bench.test`.
        var name = "a.bench.test"
    }

    static let allRows = 1...13

    static let usage = """
        OVERVIEW: what HTTPDNS protection costs, against baselines measured in the same run

        USAGE: httpdns-bench [--quick] [--only N[,N…]] [--json FILE]
               httpdns-bench --load doq=IP[:PORT]#NAME|dot=IP[:PORT]#NAME [--cacert FILE] [--connections C]
                             [--outstanding N] [--seconds T] [--name NAME]

        OPTIONS:
          --quick          fewer rounds and smaller loops (smoke runs; figures are noisier)
          --only N[,N…]    run only these rows of the table (1-13)
          --json FILE      also write every figure as JSON to FILE
          -h, --help       show this help
          --load UPSTREAM  no table: load one DNS-over-QUIC or DNS-over-TLS server with the bench's own
                           client (C connections, default 16; N queries outstanding in all, default 256;
                           for T seconds, default 2; A of NAME, default a.bench.test; the certificate
                           verified for the upstream's NAME against --cacert, else the system's CAs)
                           and print the queries per second

        Rows: 1 cache-hit lookup, 2 cold resolve per provider format, 3 10,000 concurrent lookups,
        4 URLSession + protocol, 5 direct client vs curl CLI, 6 64 MiB streamed upload,
        7 memory per cached host, 8 httpdns serve vs dnsdist (DoH, h2load; needs the Debian packages
        dnsdist and nghttp2-client), 9 loopback proxy (httpdns proxy vs plain URLSession, a direct
        download and tinyproxy; needs the Debian package tinyproxy), 10 httpdns serve with views and health
        checks vs the plain zone (h2load), 11 httpdns stub vs dnsdist's packet cache and Unbound (dnsperf;
        needs dnsdist, unbound and dnsperf), 12 httpdns serve's DNS over TLS vs dnsdist's (dnsperf -m dot;
        needs dnsdist and dnsperf), 13 httpdns serve's DNS over QUIC vs its own DoT (the bench's own load
        client; dnsperf checks it). Exit status 1 names every missed target; 64 for bad usage.
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
            case "--load":
                options.load = LoadOptions(upstream: try value(argument))
            case "--cacert", "--connections", "--outstanding", "--seconds", "--name":
                guard options.load != nil else { throw UsageError(description: "\(argument) goes after --load") }
                let text = try value(argument)
                switch argument {
                case "--cacert": options.load?.caFile = text
                case "--name": options.load?.name = text
                case "--seconds":
                    guard let seconds = Double(text), seconds > 0, seconds <= 600 else { throw UsageError(description: "--seconds takes 0 to 600") }
                    options.load?.seconds = seconds
                default:
                    guard let count = Int(text), (1...65_536).contains(count) else { throw UsageError(description: "\(argument) takes 1 to 65536") }
                    if argument == "--connections" { options.load?.connections = count } else { options.load?.outstanding = count }
                }
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
