import HTTP

/// The console's style sheet and script, served from the binary: nothing comes from elsewhere.
/// The pages work without the script; it only remembers searches in the browser and lets a
/// click on a timeline set the instant picker.
enum ConsoleAssets {
    static let stylesheetPath = "/static/console.css"
    static let scriptPath = "/static/console.js"

    /// The answer for a static file's path, or nil.
    static func file(_ path: String) -> HTTPResponse? {
        switch path {
        case stylesheetPath: .text(stylesheet, contentType: "text/css; charset=utf-8")
        case scriptPath: .text(script, contentType: "text/javascript; charset=utf-8")
        default: nil
        }
    }

    static let stylesheet = """
        :root { color-scheme: light dark; --accent: #2457c5; --muted: #667; --line: #ccd; }
        body { font: 15px/1.45 system-ui, sans-serif; margin: 0; }
        header { display: flex; gap: 1.5rem; align-items: center; padding: .6rem 1.2rem;
          border-bottom: 1px solid var(--line); flex-wrap: wrap; }
        header .brand { font-weight: 600; }
        header nav { display: flex; gap: 1rem; margin-left: auto; }
        #whoami { color: var(--muted); }
        main { padding: 1rem 1.2rem 3rem; max-width: 84rem; }
        a { color: var(--accent); }
        a:focus-visible, button:focus-visible, input:focus-visible, select:focus-visible,
        textarea:focus-visible, summary:focus-visible { outline: 3px solid #f90; outline-offset: 2px; }
        .skip { position: absolute; left: -100rem; }
        .skip:focus { left: 1rem; top: .5rem; background: Canvas; padding: .3rem; }
        table { border-collapse: collapse; width: 100%; margin: .5rem 0 1rem; }
        caption { text-align: left; color: var(--muted); padding: .2rem 0; }
        th, td { border-bottom: 1px solid var(--line); padding: .3rem .5rem; text-align: left;
          vertical-align: top; }
        td.key, td.trace, td.detail, #links li { overflow-wrap: anywhere; }
        th { white-space: nowrap; }
        label > input, label > select, label > textarea { margin-left: .4rem; }
        td.key, td.product, td.subtype, .subtype, td.trace, code, pre {
          font-family: ui-monospace, monospace; font-size: 13px; }
        #history td { font-size: 14px; }
        #history td.when { white-space: nowrap; }
        #history td.trace { font-size: 11px; word-break: break-all; max-width: 9rem; }
        #history td.detail { min-width: 16rem; }
        #history .reason, #history .subtype { color: var(--muted); }
        td.key { word-break: break-all; max-width: 18rem; }
        a.find-link { overflow-wrap: anywhere; }
        pre { white-space: pre-wrap; word-break: break-all; border: 1px solid var(--line); padding: .6rem; }
        #result { border-left: 4px solid #2a7; padding: .4rem .7rem; }
        #error, .error { border-left: 4px solid #c33; padding: .4rem .7rem; }
        .verified { border-left: 4px solid #2a7; padding: .4rem .7rem; }
        .failed { border-left: 4px solid #c33; padding: .4rem .7rem; }
        details.action { margin: .1rem 0; }
        details.action > summary { white-space: nowrap; }
        form.action { border: 1px solid var(--line); padding: .5rem; margin: .3rem 0 .6rem; min-width: 18rem; }
        form.action label, #confirm-form label { display: block; margin: .2rem 0; }
        details > summary { cursor: pointer; color: var(--accent); }
        textarea { width: 100%; max-width: 30rem; min-height: 3rem; }
        .capability svg { width: 100%; height: 3rem; border: 1px solid var(--line); cursor: crosshair; }
        .interval { stroke: Canvas; stroke-width: 1; }
        .kind-paid { fill: #2a7; } .kind-trial { fill: #6c9; } .kind-offer { fill: #4b8; }
        .kind-grace { fill: #db3; } .kind-billing-retry { fill: #e83; } .kind-hold { fill: #c63; }
        .kind-paused { fill: #999; } .kind-revoked { fill: #c33; } .kind-granted { fill: #58c; }
        .kind-gap { fill: #ddd; } .kind-pending { fill: #bbb; } .kind-other-allowed { fill: #7a7; }
        .now-line { stroke: currentColor; stroke-width: 2; }
        .instant-line { stroke: currentColor; stroke-width: 2; stroke-dasharray: 3 3; }
        .timeline-key { list-style: none; display: flex; gap: 1rem; padding: 0; margin: .2rem 0 .8rem;
          color: var(--muted); font-size: 13px; }
        .capability svg.swatch { width: .8rem; height: .8rem; border: 0; cursor: default; vertical-align: -1px; }
        .legend { color: var(--muted); font-size: 13px; }
        .visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden;
          clip: rect(0 0 0 0); white-space: nowrap; }
        """

    static let script = """
        "use strict";
        (function () {
          var KEY = "console.recent";
          function load() {
            try { return JSON.parse(localStorage.getItem(KEY) || "[]"); } catch (e) { return []; }
          }
          var form = document.getElementById("find-form");
          if (form) {
            form.addEventListener("submit", function () {
              var q = document.getElementById("q").value.trim();
              if (!q) return;
              var list = load().filter(function (x) { return x !== q; });
              list.unshift(q);
              try { localStorage.setItem(KEY, JSON.stringify(list.slice(0, 10))); } catch (e) {}
            });
          }
          var recent = document.getElementById("recent");
          if (recent) {
            var shown = {};
            recent.querySelectorAll("a").forEach(function (a) { shown[a.textContent] = true; });
            load().forEach(function (q) {
              if (shown[q]) return;
              var li = document.createElement("li");
              var a = document.createElement("a");
              a.href = "/find?q=" + encodeURIComponent(q);
              a.textContent = q;
              li.appendChild(a);
              recent.appendChild(li);
            });
          }
          var at = document.getElementById("at");
          document.querySelectorAll("#timeline svg[data-from-ms]").forEach(function (svg) {
            svg.addEventListener("click", function (event) {
              if (!at) return;
              var box = svg.getBoundingClientRect();
              var from = Number(svg.getAttribute("data-from-ms"));
              var to = Number(svg.getAttribute("data-to-ms"));
              var ms = from + (to - from) * (event.clientX - box.left) / box.width;
              at.value = new Date(ms).toISOString().slice(0, 16);
              // The click is the choice: ask for the access then at once.
              if (at.form) at.form.submit(); else at.focus();
            });
          });
        })();
        """
}
