import Foundation
import HTTPDNSCore

extension HTTPDNSViews {
    /// Largest views file read: 1 MiB (the networks belong in list files).
    package static let maxFileBytes = 1 << 20

    /// Reads a views file (JSON; `httpdns serve --views`), then every list and database it names;
    /// relative paths are relative to the file's directory:
    ///
    /// ```json
    /// {"geoip": ["country.mmdb", "asn.mmdb"],
    ///  "views": [{"name": "carrier-a", "lists": ["carrier-a.txt"], "networks": ["10.1.0.0/16"],
    ///             "countries": ["CN"], "asns": [4134],
    ///             "transfer": {"tsigKey": "carrier-a.key", "primaries": ["192.0.2.53"]}}]}
    /// ```
    ///
    /// Every member but `name` may be left out; unknown members are refused, so that a typo cannot
    /// silently drop a view's networks.
    ///
    /// - Throws: ``HTTPDNSServiceError`` `.invalidConfiguration`, its detail starting with `path:`:
    ///   not JSON, a wrong shape or unknown member, or whatever ``init(_:geoIPDatabases:)`` refuses.
    public init(contentsOfFile path: String) throws(HTTPDNSServiceError) {
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        if let size = attributes?[.size] as? Int, size > Self.maxFileBytes {
            throw HTTPDNSServiceError(.invalidConfiguration, "\(path): views file larger than \(Self.maxFileBytes) bytes")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw HTTPDNSServiceError(.invalidConfiguration, "\(path): cannot read the views file")
        }
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent()
        let (views, databases) = try Self.parse([UInt8](data), source: path) { file in
            file.hasPrefix("/") ? file : directory.appendingPathComponent(file).path
        }
        do {
            try self.init(views, geoIPDatabases: databases)
        } catch {
            throw HTTPDNSServiceError(.invalidConfiguration, "\(path): \(error.detail)")
        }
    }

    /// The views and database paths a views file's bytes describe, each file path through `resolve`.
    package static func parse(
        _ bytes: [UInt8], source: String, resolve: (String) -> String = { $0 }
    ) throws(HTTPDNSServiceError) -> (views: [View], geoIPDatabases: [String]) {
        func fail(_ detail: String) -> HTTPDNSServiceError {
            HTTPDNSServiceError(.invalidConfiguration, "\(source): \(detail)")
        }
        guard bytes.count <= maxFileBytes else { throw fail("views file larger than \(maxFileBytes) bytes") }
        var offsets: [Int]? = nil
        let document: HTTPDNSJSON
        do {
            document = try HTTPDNSJSON.parseDocument(bytes, topLevelKeyOffsets: &offsets)
        } catch {
            let (line, column) = HTTPDNSZoneFile.position(of: error.offset, in: bytes)
            throw fail("\(line):\(column): not valid JSON: \(error.reason)")
        }
        guard case .object(let root) = document else { throw fail("the views file is an object with \"views\"") }
        func strings(_ value: HTTPDNSJSON, _ what: String) throws(HTTPDNSServiceError) -> [String] {
            guard let items = value.arrayValue, items.count <= 100_000 else { throw fail("\(what) is an array of strings") }
            var out: [String] = []
            for item in items {
                guard let text = item.stringValue, !text.isEmpty, text.utf8.count <= 4_096 else {
                    throw fail("\(what) is an array of strings")
                }
                out.append(text)
            }
            return out
        }
        var views: [View] = []
        var databases: [String] = []
        for member in root.members {
            switch member.key {
            case "geoip":
                databases = try strings(member.value, "\"geoip\"").map(resolve)
            case "views":
                guard let items = member.value.arrayValue else { throw fail("\"views\" is an array of objects") }
                for (index, item) in items.enumerated() {
                    guard case .object(let object) = item else { throw fail("views[\(index)] is not an object") }
                    views.append(try view(object, index: index, resolve: resolve, strings: strings, fail: fail))
                }
            default:
                throw fail("unknown member \(HTTPDNSZone.shown(member.key)) (expected geoip, views)")
            }
        }
        return (views, databases)
    }

    private static func view(
        _ object: HTTPDNSJSONObject, index: Int, resolve: (String) -> String,
        strings: (HTTPDNSJSON, String) throws(HTTPDNSServiceError) -> [String], fail: (String) -> HTTPDNSServiceError
    ) throws(HTTPDNSServiceError) -> View {
        guard let name = object["name"]?.stringValue else { throw fail("views[\(index)] needs a \"name\" string") }
        let place = "view \(HTTPDNSZone.shown(name))"
        var view = View(name: name)
        for member in object.members {
            switch member.key {
            case "name": continue
            case "networks": view.networks = try strings(member.value, "\(place): \"networks\"")
            case "lists": view.lists = try strings(member.value, "\(place): \"lists\"").map(resolve)
            case "countries": view.countries = try strings(member.value, "\(place): \"countries\"")
            case "asns":
                guard let items = member.value.arrayValue else { throw fail("\(place): \"asns\" is an array of numbers") }
                for item in items {
                    guard case .number = item, let number = item.intValue, (0...Int(UInt32.max)).contains(number) else {
                        throw fail("\(place): \"asns\" holds numbers 0...\(UInt32.max)")
                    }
                    view.asns.append(UInt32(number))
                }
            case "transfer":
                guard case .object(let transfer) = member.value else { throw fail("\(place): \"transfer\" is an object with \"tsigKey\"") }
                var keyFile: String?
                var primaries: [String] = []
                for field in transfer.members {
                    switch field.key {
                    case "tsigKey":
                        guard let text = field.value.stringValue, !text.isEmpty, text.utf8.count <= 4_096 else {
                            throw fail("\(place): \"transfer\": \"tsigKey\" is the path of a key file")
                        }
                        keyFile = resolve(text)
                    case "primaries":
                        primaries = try strings(field.value, "\(place): \"transfer\": \"primaries\"")
                    default:
                        throw fail("\(place): \"transfer\": unknown member \(HTTPDNSZone.shown(field.key)) (expected tsigKey, primaries)")
                    }
                }
                guard let keyFile else { throw fail("\(place): \"transfer\" needs \"tsigKey\", the view's key file") }
                view.transfer = Transfer(tsigKeyFile: keyFile, primaries: primaries)
            default:
                throw fail("\(place): unknown member \(HTTPDNSZone.shown(member.key)) (expected name, networks, lists, countries, asns, transfer)")
            }
        }
        return view
    }
}
