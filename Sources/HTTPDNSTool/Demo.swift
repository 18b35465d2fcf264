/// The demonstration (`httpdns demo`, run by `make demo`).
///
/// Owned by the lead: replace the body. It receives the arguments after `demo` and returns the exit
/// status; until it is written it says so and fails.
func runDemo(arguments: [String] = []) async -> Int32 {
    Output.diagnostic("demo: not built yet")
    return ExitStatus.failure
}
