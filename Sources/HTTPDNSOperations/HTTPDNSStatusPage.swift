/// The operator console: a status document (``HTTPDNSStatusValue``) rendered as one HTML page, for
/// the browser that asks `serve`'s or the stub's `/status` for `text/html`.
///
/// The page is the document, section by section: each top-level member is a heading, an object's
/// plain members a two-column table, an array of objects a table with a column per member (in the
/// order they first appear), nested objects sub-headings. It is rendered on the server and carries
/// no script, no external asset (CSS is inline) and no form, so ``contentSecurityPolicy`` can forbid
/// everything else; it reloads itself every ``refreshSeconds`` with `<meta http-equiv="refresh">`.
/// Every name and value goes through ``HTTPDNSHTML/escaped(_:)``: a check path or a reported host
/// holding `<script>` is shown as that text.
package enum HTTPDNSStatusPage {
    /// How often the page reloads itself, in seconds.
    package static let refreshSeconds = 5
    /// The page's `Content-Type`.
    package static let contentType = "text/html; charset=utf-8"
    /// Nothing but the page's own inline style: no script runs even if escaping ever failed.
    package static let contentSecurityPolicy = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'"
    /// Headers sent with the page besides `Content-Type` (the status is live: never cached).
    package static let headers: [(name: String, value: String)] = [
        ("Content-Security-Policy", contentSecurityPolicy),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
        ("Cache-Control", "no-store"),
    ]

    /// Whether a request with this `Accept` header gets the page rather than JSON: when it values
    /// `text/html` above `application/json` (RFC 9110 §12.5.1, the most specific range deciding each
    /// type's weight). A browser's `text/html,…,*/*;q=0.8` does; `*/*` (curl), none, or a tie gets JSON.
    package static func prefersHTML(accept: String?) -> Bool {
        guard let accept, accept.utf8.count <= 4_096 else { return false }
        let html = weight(of: ("text", "html"), in: accept)
        return html > 0 && html > weight(of: ("application", "json"), in: accept)
    }

    /// The quality `accept` gives `type`: that of the most specific range matching it, 0 when none does.
    static func weight(of type: (String, String), in accept: String) -> Double {
        var best: (specificity: Int, quality: Double) = (-1, 0)
        for range in accept.split(separator: ",") {
            let parts = range.split(separator: ";").map { $0.trimmingASCIISpaces().lowercased() }
            guard let media = parts.first else { continue }
            let halves = media.split(separator: "/", maxSplits: 1).map(String.init)
            guard halves.count == 2 else { continue }
            let specificity: Int
            switch (halves[0], halves[1]) {
            case (type.0, type.1): specificity = 2
            case (type.0, "*"): specificity = 1
            case ("*", "*"): specificity = 0
            default: continue
            }
            var quality = 1.0
            for parameter in parts.dropFirst() where parameter.hasPrefix("q=") {
                quality = min(1, max(0, Double(parameter.dropFirst(2)) ?? 0))
            }
            if specificity > best.specificity || (specificity == best.specificity && quality > best.quality) {
                best = (specificity, quality)
            }
        }
        return best.quality
    }

    /// The whole page: `title` and every member of `document` as a section.
    package static func render(title: String, document: HTTPDNSStatusValue) -> String {
        var page = """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8">
            <meta http-equiv="refresh" content="\(refreshSeconds)">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(HTTPDNSHTML.escaped(title))</title>
            <style>\(style)</style>
            </head><body>
            <h1>\(HTTPDNSHTML.escaped(title))</h1>
            <p class="note">Refreshes every \(refreshSeconds) s. The same document as JSON: ask with <code>Accept: application/json</code>.</p>

            """
        if case .object(let sections) = document {
            for section in sections {
                let name = HTTPDNSHTML.escaped(section.name)
                page += "<section id=\"\(name)\"><h2>\(name)</h2>\n"
                block(section.value, level: 3, into: &page)
                page += "</section>\n"
            }
        } else {
            block(document, level: 2, into: &page)
        }
        return page + "</body></html>\n"
    }

    private static let style = """
        body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;background:#fafafa}\
        h1{font-size:1.4em}h2{font-size:1.2em;border-bottom:1px solid #ccc;margin-top:1.5em}h3,h4,h5,h6{font-size:1em}\
        table{border-collapse:collapse;margin:.5em 0}th,td{border:1px solid #ddd;padding:.2em .6em;text-align:left;vertical-align:top}\
        th{background:#eee;font-weight:600}td.n{text-align:right;font-variant-numeric:tabular-nums}\
        td.bad{background:#fdd}td.good{background:#dfd}.note,.empty{color:#666}
        """

    /// Writes `value` as tables, its nested objects and arrays under headings of `level` (capped at h6).
    private static func block(_ value: HTTPDNSStatusValue, level: Int, into page: inout String) {
        switch value {
        case .object(let members):
            let scalars = members.filter(\.value.isScalar)
            if !scalars.isEmpty {
                page += "<table class=\"fields\">\n"
                for member in scalars {
                    page += "<tr><th>\(HTTPDNSHTML.escaped(member.name))</th>\(cell(member.value, key: member.name))</tr>\n"
                }
                page += "</table>\n"
            }
            let heading = "h\(min(level, 6))"
            for member in members where !member.value.isScalar {
                page += "<\(heading)>\(HTTPDNSHTML.escaped(member.name))</\(heading)>\n"
                block(member.value, level: level + 1, into: &page)
            }
        case .array(let items) where items.isEmpty:
            page += "<p class=\"empty\">none</p>\n"
        case .array(let items) where items.allSatisfy({ if case .object = $0 { true } else { false } }):
            grid(items, into: &page)
        case .array(let items):
            page += "<ul>\n" + items.map { "<li>\(text($0))</li>\n" }.joined() + "</ul>\n"
        default:
            page += "<p>\(text(value))</p>\n"
        }
    }

    /// An array of objects as one table, a column per member name in the order names first appear.
    private static func grid(_ rows: [HTTPDNSStatusValue], into page: inout String) {
        var columns: [String] = []
        for case .object(let members) in rows {
            for member in members where !columns.contains(member.name) { columns.append(member.name) }
        }
        page += "<table class=\"grid\"><thead><tr>" + columns.map { "<th>\(HTTPDNSHTML.escaped($0))</th>" }.joined() + "</tr></thead><tbody>\n"
        for row in rows {
            page += "<tr>" + columns.map { cell(row[$0] ?? .null, key: $0) }.joined() + "</tr>\n"
        }
        page += "</tbody></table>\n"
    }

    /// One `<td>`: numbers right-aligned, states that mean trouble or health tinted.
    private static func cell(_ value: HTTPDNSStatusValue, key: String) -> String {
        var classes: String
        switch value {
        case .number: classes = "n"
        case .string("down"), .string("failed"), .string("demoted"), .string("expired"), .string("disconnected"): classes = "bad"
        case .string("up"), .string("ok"), .string("connected"): classes = "good"
        default: classes = ""
        }
        classes = classes.isEmpty ? "" : " class=\"\(classes)\""
        return "<td data-key=\"\(HTTPDNSHTML.escaped(key))\"\(classes)>\(text(value))</td>"
    }

    /// The escaped text of a value inside a cell: a list joined by commas, an object as `name: value` pairs.
    private static func text(_ value: HTTPDNSStatusValue) -> String {
        switch value {
        case .string(let text): HTTPDNSHTML.escaped(text)
        case .number(let text): HTTPDNSHTML.escaped(text)
        case .bool(let flag): flag ? "true" : "false"
        case .null: "<span class=\"empty\">-</span>"
        case .array(let items): items.map(text).joined(separator: ", ")
        case .object(let members): members.map { "\(HTTPDNSHTML.escaped($0.name)): \(text($0.value))" }.joined(separator: "; ")
        }
    }
}

extension Substring {
    /// Without leading and trailing spaces and tabs (HTTP's optional whitespace).
    fileprivate func trimmingASCIISpaces() -> Substring {
        var text = self
        while let first = text.first, first == " " || first == "\t" { text.removeFirst() }
        while let last = text.last, last == " " || last == "\t" { text.removeLast() }
        return text
    }
}
