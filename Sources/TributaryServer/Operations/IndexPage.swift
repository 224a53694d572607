/// The page at `GET /`: the groups live over `EventSource` (updates, connection state,
/// reconnection), and the rows with a "more" button per topic that activates the stream's
/// `loadMore` trigger. One self-contained document; no build step, no external assets.
///
/// For tests and curious humans, `<body>` carries `data-state` (`connecting`, `live`,
/// `reconnecting`) and `data-updates` (group snapshots received).
enum IndexPage {
    static let html = #"""
    <!doctype html>
    <html lang="en">
    <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>Tributary — live</title>
    <style>
      :root { --ink: #1d2733; --muted: #6b7785; --line: #e3e8ee; --accent: #0b72e7; --fresh: #fff4c2; }
      * { box-sizing: border-box; }
      body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink); background: #f6f8fa; }
      header { display: flex; align-items: center; gap: 12px; padding: 18px 28px; background: #fff; border-bottom: 1px solid var(--line); }
      header h1 { font-size: 20px; margin: 0; }
      .state { font-size: 13px; padding: 2px 10px; border-radius: 999px; background: #eef1f4; color: var(--muted); }
      .state.live { background: #e3f6e8; color: #17803d; }
      .state.reconnecting { background: #fde8e8; color: #b42318; }
      main { max-width: 980px; margin: 0 auto; padding: 24px 28px; display: grid; gap: 28px; }
      section h2 { font-size: 16px; margin: 0 0 10px; display: flex; justify-content: space-between; align-items: baseline; }
      section h2 small { font-weight: normal; color: var(--muted); font-size: 12px; }
      table { width: 100%; border-collapse: collapse; background: #fff; border: 1px solid var(--line); border-radius: 8px; overflow: hidden; }
      th, td { text-align: left; padding: 8px 12px; border-bottom: 1px solid var(--line); }
      th { font-size: 12px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); background: #fafbfc; }
      td.count { font-variant-numeric: tabular-nums; font-weight: 600; }
      tr.changed td { animation: fresh 1.6s ease-out; }
      @keyframes fresh { from { background: var(--fresh); } to { background: transparent; } }
      .error { color: #b42318; font-size: 13px; }
      .row { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 10px 12px; margin-bottom: 10px; }
      .row h3 { margin: 0 0 8px; font-size: 14px; }
      .medias { display: flex; gap: 8px; overflow-x: auto; align-items: center; }
      .media { flex: 0 0 auto; padding: 6px 10px; border-radius: 6px; background: #eef4fd; font-size: 13px; }
      button { flex: 0 0 auto; border: 1px solid var(--accent); color: var(--accent); background: #fff; border-radius: 6px; padding: 5px 10px; cursor: pointer; }
      button:hover { background: #eef4fd; }
    </style>
    </head>
    <body data-state="connecting" data-updates="0">
    <header><h1>Tributary</h1><span id="state" class="state">connecting…</span></header>
    <main>
      <section>
        <h2>Groups <small id="version">waiting for the first snapshot</small></h2>
        <table><thead><tr><th>Group</th><th>Tasks</th><th>Last updated</th></tr></thead><tbody id="groups"></tbody></table>
        <p id="groups-error" class="error"></p>
      </section>
      <section>
        <h2>Rows <small>“more” loads the next page of one topic, for this page only</small></h2>
        <div id="rows"></div>
        <p id="rows-error" class="error"></p>
      </section>
    </main>
    <script>
    "use strict";
    const $ = (id) => document.getElementById(id);
    const text = (value) => String(value ?? "");

    function setState(state) {
      document.body.dataset.state = state;
      $("state").className = "state " + state;
      $("state").textContent = { connecting: "connecting…", live: "live", reconnecting: "reconnecting…" }[state];
    }

    // Our `event: error` carries data; the browser's own error event (connection lost) does not.
    function onServerError(source, target) {
      source.addEventListener("error", (event) => {
        if (event.data) { target.textContent = JSON.parse(event.data).error.message; return; }
        if (source === groups) setState("reconnecting");
      });
    }

    const previous = new Map();
    const groups = new EventSource("/groups");
    groups.addEventListener("open", () => setState("live"));
    groups.addEventListener("snapshot", (event) => {
      setState("live");
      $("groups-error").textContent = "";
      const body = $("groups");
      body.replaceChildren();
      for (const group of JSON.parse(event.data)) {
        const row = document.createElement("tr");
        for (const value of [group.name, group.error ? "—" : group.taskCount, group.lastUpdated ?? group.error?.message]) {
          const cell = document.createElement("td");
          cell.textContent = text(value);
          row.append(cell);
        }
        row.children[1].className = "count";
        const signature = text(group.taskCount) + text(group.lastUpdated);
        if (previous.has(group.id) && previous.get(group.id) !== signature) row.className = "changed";
        previous.set(group.id, signature);
        body.append(row);
      }
      document.body.dataset.updates = String(Number(document.body.dataset.updates) + 1);
      $("version").textContent = "version " + event.lastEventId + " · " + new Date().toLocaleTimeString();
    });
    onServerError(groups, $("groups-error"));

    let rowsStream = null;
    const rows = new EventSource("/rows");
    rows.addEventListener("stream", (event) => { rowsStream = JSON.parse(event.data).id; });
    rows.addEventListener("snapshot", (event) => {
      $("rows-error").textContent = "";
      const container = $("rows");
      container.replaceChildren();
      for (const row of JSON.parse(event.data)) {
        const box = document.createElement("div");
        box.className = "row";
        const title = document.createElement("h3");
        title.textContent = text(row.topic.title ?? row.topic.id);
        const medias = document.createElement("div");
        medias.className = "medias";
        for (const media of row.medias) {
          const chip = document.createElement("span");
          chip.className = "media";
          chip.textContent = text(media.title ?? media.id);
          medias.append(chip);
        }
        const more = document.createElement("button");
        more.textContent = "more";
        more.addEventListener("click", () => {
          fetch(`/streams/${rowsStream}/triggers/loadMore?topic=${encodeURIComponent(row.topic.id)}`, { method: "POST" });
        });
        medias.append(more);
        if (row.error) {
          const problem = document.createElement("span");
          problem.className = "error";
          problem.textContent = row.error.message;
          medias.append(problem);
        }
        box.append(title, medias);
        container.append(box);
      }
    });
    onServerError(rows, $("rows-error"));
    </script>
    </body>
    </html>
    """#
}
