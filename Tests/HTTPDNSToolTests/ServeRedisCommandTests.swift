import Foundation
import HTTPDNSTestSupport
import XCTest

/// `httpdns serve` with the config file's `serve.redis` (the password stays out of the command
/// line; database 2, so `SELECT` is exercised): two built binaries sharing one real redis-server
/// count each other's reports, and the decision one makes reaches the other's answers; a bad
/// `--redis` is a usage error.
final class ServeRedisCommandTests: ToolTestCase {
    func testTwoInstancesShareReportsAndDecisionsThroughTheConfiguredRedis() throws {
        let redis = try RedisServer()
        addCleanup { redis.stop() }
        let directory = try temporaryDirectory()
        let zone = directory.appendingPathComponent("zone.json")
        try Data(#"{"www.example.test": {"A": ["127.0.0.1", "127.0.0.2"], "ttl": 60}}"#.utf8).write(to: zone)
        let config = directory.appendingPathComponent("config.json")
        try Data(#"{"serve": {"reportTokens": ["t0ken"], "reportThreshold": 2, "redis": "\#(redis.url())/2", "redisNamespace": "tool"}}"#.utf8)
            .write(to: config)
        let arguments = ["serve", "--listen", "127.0.0.1:0", "--zone", zone.path, "--config", config.path, "--trusted-proxy", "127.0.0.1/32"]
        let first = try runner.start(arguments)
        defer { assertStopsCleanly(first) }
        let second = try runner.start(arguments)
        defer { assertStopsCleanly(second) }
        let bases = try [first, second].map { String(try $0.waitForLine(startingWith: "listening on ").dropFirst("listening on ".count)) }
        // 127.0.0.1 on a closed port: the server's own probe fails at once, so the decision is "down".
        let port = try closedPort()
        let body = #"{"reports":[{"host":"www.example.test","address":"127.0.0.1","port":\#(port),"error":"connect-refused","time":1796300000}]}"#

        XCTAssertEqual(try curl(["-X", "POST", "-H", "Authorization: Bearer t0ken", "-H", "Content-Type: application/json",
                                 "-H", "X-Forwarded-For: 198.51.100.7", "--data-binary", body, "\(bases[0])/report"]), "{\"accepted\":1}")
        // The barrier: the first instance's report is in Redis before the second gets its own.
        let shared = pollUntilBlocking { (try? self.redisCLI(redis, ["ZCARD", "tool:reports:default:127.0.0.1"])) == "1" }
        XCTAssertTrue(shared, "the first report never reached Redis")
        XCTAssertEqual(try curl(["-X", "POST", "-H", "Authorization: Bearer t0ken", "-H", "Content-Type: application/json",
                                 "-H", "X-Forwarded-For: 198.51.101.7", "--data-binary", body, "\(bases[1])/report"]), "{\"accepted\":1}")
        // Each instance saw one network; together two, the threshold: down on both.
        for base in bases {
            let down = pollUntilBlocking(every: .milliseconds(50)) {
                (try? self.curl(["\(base)/d?dn=www.example.test"]))?.split(separator: ",").first == "127.0.0.2"
            }
            XCTAssertTrue(down, "\(base) still answers \((try? curl(["\(base)/d?dn=www.example.test"])) ?? "nothing")")
            let metrics = try curl(["\(base)/metrics"])
            XCTAssertTrue(metrics.contains("httpdns_redis_up 1\n"), metrics)
        }
        XCTAssertEqual(try redisCLI(redis, ["EXISTS", "tool:decision:down:127.0.0.1"]), "1")
        // The reference parser reads the Redis families too.
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let check = try RunningTool(
            executable: URL(fileURLWithPath: "/usr/bin/python3"),
            arguments: [root.appendingPathComponent("scripts/check-metrics.py").path, "\(bases[1])/metrics", "--require", "reports,redis",
                        "--expect", "httpdns_redis_up=1", "--expect", "httpdns_redis_errors_total{code=\"auth\"}=0"])
        XCTAssertEqual(try check.wait(timeout: .seconds(60)), 0, String(decoding: check.stdout + check.stderr, as: UTF8.self))

        assertUsage(try run(["serve", "--redis", "http://127.0.0.1:6379"]))
        assertUsage(try run(["serve", "--redis", "redis://127.0.0.1:0"]))
        assertUsage(try run(["serve", "--redis-namespace", "alone"]))
    }

    private func curl(_ arguments: [String]) throws -> String {
        let curl = try RunningTool(executable: URL(fileURLWithPath: "/usr/bin/curl"), arguments: ["-sS", "--max-time", "10", "--noproxy", "*"] + arguments)
        XCTAssertEqual(try curl.wait(timeout: .seconds(30)), 0, String(decoding: curl.stderr, as: UTF8.self))
        return String(decoding: curl.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private func redisCLI(_ redis: RedisServer, _ command: [String]) throws -> String {
        let tool = try RunningTool(
            executable: URL(fileURLWithPath: "/usr/bin/redis-cli"),
            arguments: ["-h", "127.0.0.1", "-p", String(redis.port), "-n", "2", "-a", redis.configuration.password, "--no-auth-warning"] + command)
        _ = try tool.wait(timeout: .seconds(10))
        return String(decoding: tool.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
