import HTTPDNSCore
import XCTest

/// Asserts that `body` throws an ``HTTPDNSError`` with `code`.
func assertThrowsCode<T>(
    _ code: HTTPDNSError.Code, _ message: @autoclosure () -> String = "",
    file: StaticString = #filePath, line: UInt = #line,
    _ body: () throws -> T
) {
    do {
        let value = try body()
        XCTFail("expected \(code), got \(value) \(message())", file: file, line: line)
    } catch let error as HTTPDNSError {
        XCTAssertEqual(error.code, code, "\(error) \(message())", file: file, line: line)
    } catch {
        XCTFail("expected HTTPDNSError \(code), got \(error) \(message())", file: file, line: line)
    }
}

/// A repeatable PRNG (SplitMix64) so that randomized tests fail the same way every run.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
}

func ip(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> HTTPDNSIPAddress {
    guard let address = HTTPDNSIPAddress(text) else {
        XCTFail("bad test address \(text)", file: file, line: line)
        return HTTPDNSIPAddress(bytes: [0, 0, 0, 0])!
    }
    return address
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

func unhex(_ text: String) -> [UInt8] {
    (try? HTTPDNSCrypto.hexDecode(text)) ?? []
}

/// Feeds `body` every strict prefix of `valid` and a set of seeded mutations; the parser must
/// return or throw an ``HTTPDNSError`` (the typed throw guarantees the type), never crash or hang.
/// Returns how many inputs were accepted, so callers can check that some were rejected.
@discardableResult
func fuzz(_ valid: [UInt8], seed: UInt64, rounds: Int = 400, _ parse: ([UInt8]) throws -> [HTTPDNSRecordSet]) -> (accepted: Int, rejected: Int) {
    var accepted = 0
    var rejected = 0
    func run(_ input: [UInt8]) {
        do {
            let sets = try parse(input)
            for set in sets { _ = set.host.count }
            accepted += 1
        } catch is HTTPDNSError {
            rejected += 1
        } catch {
            XCTFail("untyped error \(error)")
        }
    }
    for length in 0..<valid.count { run(Array(valid[0..<length])) }
    var generator = SeededGenerator(seed: seed)
    let alphabet = bytes("0123456789abcdef.:;,|-[]{}\"\\ \n\r\t\u{0}xyzAF") + [0xff, 0xc3, 0x80]
    for _ in 0..<rounds {
        var input = valid
        let edits = Int.random(in: 1...4, using: &generator)
        for _ in 0..<edits where !input.isEmpty {
            let position = Int.random(in: 0..<input.count, using: &generator)
            switch Int.random(in: 0..<4, using: &generator) {
            case 0: input[position] = alphabet.randomElement(using: &generator)!
            case 1: input.remove(at: position)
            case 2: input.insert(alphabet.randomElement(using: &generator)!, at: position)
            default:
                let end = min(input.count, position + Int.random(in: 1...8, using: &generator))
                input.insert(contentsOf: Array(input[position..<end]), at: position)
            }
        }
        run(input)
    }
    return (accepted, rejected)
}
