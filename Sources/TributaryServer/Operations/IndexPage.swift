/// The page at `GET /`: every live view over ONE connection, `GET /events` for the groups, the
/// rows and a search (a browser holds at most 6 HTTP/1.1 connections per origin, so a page must
/// not spend one per view). The groups update live; each topic's "more" button activates the
/// rows stream's `loadMore` trigger; typing in the search box sets the search stream's input
/// `q`. The server debounces it, skips repeats and cancels a superseded search; the page shows
/// the query each result set answers, as the snapshot names it, so results of an older query are
/// never shown as the newer one's. One self-contained document; no build step, no external
/// assets: its markup, style and script are the files of `LivePage/` (`page.html`, `page.css`,
/// `page.js`), embedded in the binary at build time and put together here once.
///
/// Input values are sent one at a time, the latest one when the previous answer is in:
/// requests issued side by side may travel on different connections and arrive out of order,
/// and then an older value would win.
///
/// The page subscribes with `updates=patch`: after each resource's first snapshot, a change
/// comes as an RFC 6902 JSON Patch, which `applyPatch` (a small function of the page, no
/// library) applies to the document the page keeps. A patch that does not apply (it never
/// should) makes the page start over with a new connection, which sends every document whole.
///
/// With auth on, the page's requests carry the token as the `tributary_token` cookie: open it
/// as `/#access_token=<token>` once (or set the cookie otherwise).
///
/// When the configuration has a list resource whose route takes one parameter (the shipped
/// `teamgroups`: `/teams/{team}/groups`), the page shows it too, on the same connection
/// (`teamgroups.team=core` on `/events`), with a box for the value: a new value opens the
/// connection anew, as a stream's parameters are fixed when it opens. ``page(parameterized:)``
/// names it in `<body data-param-resource data-param-name>`.
///
/// For tests and curious humans, `<body>` carries `data-state` (`connecting`, `live`,
/// `reconnecting`), `data-updates` (group documents shown, whole or patched) and
/// `data-patches` (group patches applied); `#results` carries `data-query` (the query the
/// results shown answer).
enum IndexPage {
    /// The page for a configuration whose list resource `parameterized` (its name and its one
    /// route parameter), if any, the page shows beside the others.
    static func page(parameterized: (resource: String, parameter: String)?) -> String {
        let attributes = parameterized.map { #" data-param-resource=""# + escaped($0.resource) + #"" data-param-name=""# + escaped($0.parameter) + "\"" } ?? ""
        return document.replacingOccurrences(of: "{{PARAMETERIZED}}", with: attributes)
    }

    /// `text` for an HTML attribute value (resource and parameter names are letters, digits,
    /// `-` and `_`, so this never has work to do; kept for safety).
    private static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "\"", with: "&quot;").replacingOccurrences(of: "<", with: "&lt;")
    }

    /// `page.html` with `page.css` and `page.js` in place of its `{{STYLE}}` and `{{SCRIPT}}`.
    private static let document: String = {
        let html = String(decoding: PackageResources.page_html, as: UTF8.self)
        let css = String(decoding: PackageResources.page_css, as: UTF8.self)
        let js = String(decoding: PackageResources.page_js, as: UTF8.self)
        return html.replacingOccurrences(of: "{{STYLE}}", with: css).replacingOccurrences(of: "{{SCRIPT}}", with: js)
    }()
}
