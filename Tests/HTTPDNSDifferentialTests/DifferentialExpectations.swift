/// The scenarios where the URL protocol route differs from plain `URLSession` on purpose, each
/// naming its row in the README table "URLProtocol route: corelibs limits".
enum DifferentialExpectations {
    static let urlProtocol: [String: String] = [:]
}
