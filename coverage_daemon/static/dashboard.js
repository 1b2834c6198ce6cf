// coverage-mcp dashboard: one projection (GET /api/dashboard), refreshed by server-sent events while visible.
// The same script runs the static report (`coverage-mcp report --html`), whose data is embedded in the page.
"use strict";
(function () {
  const SVG = "http://www.w3.org/2000/svg";
  const COUNTERS = ["lines", "branches", "functions"];
  const CATEGORY_ORDER = ["UNC", "LBC", "UIC", "UBC", "GBC", "GIC", "GNC", "CBC", "EUB", "ECB", "DUB", "DCB"];
  const BAD = new Set(["UNC", "LBC", "UIC"]);
  const GOOD = new Set(["GBC", "GIC", "GNC"]);
  const embedded = document.getElementById("dashboard-data");
  const staticData = embedded ? JSON.parse(embedded.textContent) : null;
  const params = new URLSearchParams(window.location.search);
  const state = {
    project: params.get("project") || "", suite: params.get("suite") || "",
    current: params.get("current") || "", baseline: params.get("baseline") || "",
    composite: params.get("composite") || "", composite_baseline: params.get("composite_baseline") || "",
    order: params.get("order") || "",
  };
  let data = null;
  let stream = null;
  // The file table's column and direction; the server orders (and cuts) the files by the same column.
  const SERVER_ORDER = { "path": "path", "lines.missed": "uncovered", "headline.pct": "coverage" };
  const ORDER_COLUMN = { path: ["path", 1], uncovered: ["lines.missed", -1], coverage: ["headline.pct", 1] };
  let [sortKey, sortDir] = ORDER_COLUMN[state.order] || ORDER_COLUMN.path;
  let focusSort = null;
  // Tests and benchmarks read these; nothing else does.
  const stats = window.__dashboard = { loads: 0, renders: 0, streamsOpened: 0, streamsClosed: 0, events: 0 };

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }
  function svg(tag, attrs, ...children) {
    const node = document.createElementNS(SVG, tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
    for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    return node;
  }
  function byId(id) { return document.getElementById(id); }
  function fill(id, ...children) {
    const node = byId(id);
    node.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined));
    return node;
  }
  function pct(value) { return value === null || value === undefined ? "—" : value.toFixed(2) + "%"; }
  function ratio(hit, found) { return found ? (100 * hit / found) : null; }
  function short(sha) { return sha ? sha.slice(0, 10) : "no commit"; }
  function when(iso) { return iso ? iso.replace("T", " ").slice(0, 19) : ""; }
  function status(text) { byId("status").textContent = text; }
  function note(text) { return el("p", { class: "note", text }); }

  // -- loading --------------------------------------------------------------------------------
  function query() {
    const q = new URLSearchParams();
    for (const key of ["project", "suite", "current", "baseline", "composite", "composite_baseline", "order"]) if (state[key]) q.set(key, state[key]);
    return q;
  }
  async function load() {
    if (staticData) { render(staticData); return; }
    stats.loads += 1;
    let response;
    try {
      response = await fetch("/api/dashboard?" + query().toString(), { credentials: "same-origin", headers: { Accept: "application/json" } });
    } catch (error) { status("The daemon did not answer: " + error.message); return; }
    const body = await response.json().catch(() => null);
    if (!response.ok) {
      const error = body && body.error;
      status(error ? error.message + ". " + error.suggestion : "Error " + response.status);
      return;
    }
    render(body.data);
    keepInAddress();
    syncStream();
  }
  // The address names the project shown (and the rest of the selection): a reload or a shared link keeps it.
  function keepInAddress() {
    const wanted = "?" + query().toString();
    if (window.location.search !== wanted) window.history.replaceState(null, "", wanted);
  }
  function choose(key, value) {
    state[key] = value;
    if (key === "project") { state.suite = ""; state.current = ""; state.baseline = ""; }
    if (key === "project") { state.composite = ""; state.composite_baseline = ""; }
    if (key === "suite") { state.current = ""; state.baseline = ""; }
    if (key === "composite" && state.composite_baseline === value) state.composite_baseline = "";
    if (key === "current" && state.baseline === value) state.baseline = "";
    if (!staticData) {
      window.history.replaceState(null, "", "?" + query().toString());
      closeStream();
      load();
    }
  }

  // -- the event stream: open only while the tab is visible -----------------------------------
  function openStream() {
    if (staticData || stream || !data || document.visibilityState !== "visible") return;
    stream = new EventSource("/api/dashboard/events?project=" + encodeURIComponent(data.project.project_id));
    stats.streamsOpened += 1;
    stream.addEventListener("refresh", () => { stats.events += 1; load(); });
    // Sent first on every (re)connection: what was stored meanwhile is loaded once.
    stream.addEventListener("revision", (event) => {
      if (data && JSON.parse(event.data).revision !== data.revision) { stats.events += 1; load(); }
    });
    stream.addEventListener("error", () => {
      if (!stream || stream.readyState !== 2) { status("Reconnecting…"); return; }
      // refused (429: too many dashboard tabs open) or the daemon stopped: no retry; reload to try again
      closeStream();
      status("Live updates are off: too many dashboard tabs are open, or the daemon stopped. Close other tabs and reload.");
    });
    stream.addEventListener("open", () => status("Live: updates as coverage is stored"));
  }
  function closeStream() {
    if (!stream) return;
    stream.close();
    stream = null;
    stats.streamsClosed += 1;
  }
  function syncStream() {
    if (document.visibilityState === "visible") openStream(); else closeStream();
  }
  document.addEventListener("visibilitychange", () => {
    if (staticData) return;
    if (document.visibilityState === "visible") { load(); } else { closeStream(); status("Paused while the tab is hidden"); }
  });

  // -- rendering ------------------------------------------------------------------------------
  function render(d) {
    data = d;
    state.project = d.project.project_id;
    renderPickers(d);
    const p = d.project;
    const measured = (side, point) => {
      if (!point) return "";
      const how = point.run ? "run " + point.run.run_id + " of " + point.run.command_id +
        (point.run.args.length ? " with " + point.run.args.join(" ") : " (full)") +
        (point.run.fingerprint ? ", fingerprint " + point.run.fingerprint.slice(0, 12) : "") : "imported " + point.format;
      return " · " + side + ": " + how + (point.scope === "subset" ? ", a subset of the tests" : "") +
        (point.detail === "compacted" ? ", detail compacted" : "");
    };
    byId("where").textContent = p.checkout_path + " · " + (p.branch || "detached") + " @ " + short(p.head) +
      (p.dirty ? " (uncommitted changes)" : "") + measured("current", d.selection.current) +
      measured("baseline", d.selection.baseline);
    renderMetrics(d);
    renderTimeline(d);
    renderChange(d);
    renderFiles(d);
    renderTests(d);
    renderRuns(d.runs);
    renderApprovals(d.approvals);
    renderCompaction(d.compaction);
    renderComposite(d.composite);
    stats.renders += 1;
    if (stats.firstRenderMs === undefined) stats.firstRenderMs = performance.now();  // from navigation start
    document.body.dataset.revision = d.revision;
    document.body.dataset.ready = "true";
    if (staticData) status("Static report, generated " + when(d.generated_at || ""));
    else if (!stream) status("Loaded");
  }

  function options(select, items, selected) {
    select.replaceChildren(...items.map(([value, label]) => {
      const option = el("option", { value, text: label });
      if (value === selected) option.selected = true;
      return option;
    }));
  }
  function snapLabel(point) {
    // the producing tool's own total, as it rounds it (lines for a snapshot without one)
    const h = point.totals && point.totals.headline, t = point.totals && point.totals.lines;
    return short(point.commit) + " · " + when(point.created_at).slice(0, 16) + (h ? " · " + h.text : t ? " · " + pct(t.percent) : "") +
      " · " + point.snapshot_id.slice(5, 13);
  }
  function renderPickers(d) {
    const projects = d.projects || [{ project_id: d.project.project_id, checkout_path: d.project.checkout_path }];
    options(byId("pick-project"), projects.map((p) => [p.project_id, p.checkout_path]), d.project.project_id);
    options(byId("pick-suite"), (d.suites.length ? d.suites : [d.suite]).map((s) => [s, s]), d.suite);
    const points = d.timeline.points.slice().reverse();
    const cur = d.selection.current, base = d.selection.baseline;
    options(byId("pick-current"), points.map((p) => [p.snapshot_id, snapLabel(p)]), cur ? cur.snapshot_id : "");
    options(byId("pick-baseline"), [["none", "none (no comparison)"], ...points.map((p) => [p.snapshot_id, snapLabel(p)])],
      base ? base.snapshot_id : "none");
    for (const select of document.querySelectorAll("#pickers select")) {
      select.disabled = !!staticData;
      // a report is one selection, written once: say so where the choice would be
      if (staticData) select.title = "This report was written for this selection; `coverage-mcp report --html DIR --current ID --baseline ID` writes another, the live dashboard (coverage-mcp dashboard) picks any.";
    }
    if (staticData && !byId("pickers-note")) byId("pickers").after(el("p", { id: "pickers-note", class: "note",
      text: "A static report shows the selection it was written for; `coverage-mcp dashboard` picks any." }));
  }

  function renderMetrics(d) {
    for (const name of ["headline", ...COUNTERS]) {
      const card = byId("metric-" + name);
      const m = d.metrics[name];
      if (!card || !m) continue;
      const c = m.current;
      // the total card shows the producing tool's figure as it prints it (coverage.py: statements and branches)
      if (name === "headline") card.querySelector(".counter").textContent = c ? "(" + c.counter + ")" : "";
      card.querySelector(".percent").textContent = c ? (c.text || pct(c.percent)) : "—";
      card.querySelector(".counts").textContent = c ? c.hit + " of " + c.found + " covered" : "not measured";
      const delta = card.querySelector(".delta");
      delta.classList.remove("up", "down");
      if (m.delta === null || m.delta === undefined) {
        delta.textContent = d.selection.baseline ? "no delta" : "no baseline";
      } else {
        // the CLI's own text (`coverage-mcp diff`): exact from the counts, "<0.01" for a tiny change
        const shown = (m.delta_text || "").replace(/%$/, "").replace(/^-/, "−").replace(/^0\.00$/, "±0.00");
        delta.textContent = shown + " points vs baseline (" + pct(m.baseline.percent) + ")";
        delta.classList.add(m.delta > 0 ? "up" : m.delta < 0 ? "down" : "same");
      }
    }
  }

  // What a snapshot is, in one line: hover, focus and the readout under the chart name it so.
  function pointWords(p) {
    const t = p.totals || {};
    const figures = COUNTERS.filter((n) => t[n] && t[n].percent !== null).map((n) => n + " " + pct(t[n].percent));
    const head = t.headline ? "total " + t.headline.text + " (" + t.headline.counter + ")" : null;
    return [p.snapshot_id, short(p.commit) + (p.branch ? " on " + p.branch : ""), when(p.created_at).slice(0, 16),
      p.scope === "subset" ? "a subset of the tests (not in the line)" : "complete",
      p.dirty ? "uncommitted changes" : null, p.run ? "run " + p.run.run_id : null, head, ...figures,
      p.retention ? retentionWords(p.retention) : null]
      .filter(Boolean).join(" · ");
  }
  function renderTimeline(d) {
    const points = d.timeline.points;
    const box = byId("timeline-chart");
    if (!points.length) { box.replaceChildren(note("No snapshot of this suite yet.")); return; }
    // Drawn at the box's own width (one unit a pixel): labels stay readable on a phone, and as many fit as room allows.
    const W = Math.max(300, Math.round((box.clientWidth || 1198) - 18)), H = 236, L = 44, R = 16, T = 22, B = 40;
    const span = W - L - R;
    const x = (i) => L + (points.length === 1 ? span / 2 : i * span / (points.length - 1));
    const y = (v) => T + (100 - v) * (H - T - B) / 100;
    const chart = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "group", "aria-labelledby": "timeline-title" });
    chart.append(svg("title", { id: "timeline-title" }, "Line, branch and function coverage of " + points.length +
      " snapshots, oldest to newest; subset runs are drawn hollow and left out of the lines"));
    for (const v of [0, 25, 50, 75, 100]) {
      chart.append(svg("line", { class: "axis", x1: L, x2: W - R, y1: y(v), y2: y(v) }));
      chart.append(svg("text", { x: 4, y: y(v) + 4 }, v + "%"));
    }
    const readout = el("p", { class: "readout", id: "timeline-readout", "aria-live": "polite" });
    const show = (p) => { readout.textContent = pointWords(p); };
    // One hover band per snapshot, the whole height: pointing anywhere above a commit names its snapshot.
    const band = points.length === 1 ? span : span / (points.length - 1);
    points.forEach((p, i) => {
      const hover = svg("rect", { class: "hover", x: (x(i) - band / 2).toFixed(1), y: T, width: band.toFixed(1),
        height: H - T - B, "data-snapshot": p.snapshot_id }, svg("title", {}, pointWords(p)));
      hover.addEventListener("pointerenter", () => show(p));
      chart.append(hover);
    });
    // The x axis: a commit and its date under every k-th snapshot, k chosen so no two labels overlap.
    const step = Math.max(1, Math.ceil(96 / band));
    points.forEach((p, i) => {
      const last = i === points.length - 1;
      if (!(i % step === 0 || last) || (!last && points.length - 1 - i < step && i !== 0)) return;
      const anchor = points.length === 1 ? "middle" : i === 0 ? "start" : last ? "end" : "middle";
      chart.append(svg("line", { class: "tick", x1: x(i), x2: x(i), y1: H - B, y2: H - B + 4 }));
      chart.append(svg("text", { class: "xlabel", x: x(i), y: H - B + 16, "text-anchor": anchor },
        short(p.commit).slice(0, 7) + (p.dirty ? "+" : "")));
      chart.append(svg("text", { class: "xlabel date", x: x(i), y: H - B + 30, "text-anchor": anchor },
        when(p.created_at).slice(5, 16)));
    });
    const cur = d.selection.current && d.selection.current.snapshot_id;
    const base = d.selection.baseline && d.selection.baseline.snapshot_id;
    points.forEach((p, i) => {
      for (const [id, word] of [[cur, "current"], [base, "baseline"]]) {
        if (p.snapshot_id !== id) continue;
        const right = x(i) > W - 90;
        chart.append(svg("line", { class: "marker m-" + word, x1: x(i), x2: x(i), y1: T - 4, y2: H - B }));
        chart.append(svg("text", { class: "mlabel m-" + word, x: right ? x(i) - 4 : x(i) + 4,
          // current at the top, baseline at the foot: neighbours never write over each other
          y: word === "current" ? T - 8 : H - B - 6, "text-anchor": right ? "end" : "start" }, word));
      }
    });
    for (const name of COUNTERS) {
      const coords = [];
      points.forEach((p, i) => {
        const t = p.totals && p.totals[name];
        if (t && t.percent !== null) coords.push([x(i), y(t.percent), p, t]);
      });
      if (!coords.length) continue;
      // The line joins complete measurements only: a subset run measured fewer tests, not less coverage.
      const complete = coords.filter((c) => c[2].scope !== "subset");
      if (complete.length > 1) {
        chart.append(svg("polyline", { class: "series s-" + name,
          points: complete.map((c) => c[0].toFixed(1) + "," + c[1].toFixed(1)).join(" ") }));
      }
      for (const [cx, cy, p, t] of coords) {
        const label = name + " " + pct(t.percent) + " · " + pointWords(p);
        const point = svg("circle", { class: "s-" + name + (p.scope === "subset" ? " subset" : ""),
          cx: cx.toFixed(1), cy: cy.toFixed(1), r: p.scope === "subset" ? 4.5 : 4, "data-snapshot": p.snapshot_id },
        svg("title", {}, label));
        point.addEventListener("pointerenter", () => show(p));
        if (name === "lines" && !staticData) {  // one stop per snapshot for the keyboard: pick it as current
          point.setAttribute("tabindex", "0");
          point.setAttribute("role", "button");
          point.setAttribute("aria-label", label + ": show this snapshot");
          point.addEventListener("focus", () => show(p));
          point.addEventListener("click", () => choose("current", p.snapshot_id));
          point.addEventListener("keydown", (event) => { if (event.key === "Enter" || event.key === " ") { event.preventDefault(); choose("current", p.snapshot_id); } });
        }
        chart.append(point);
      }
    }
    const selected = points.find((p) => p.snapshot_id === cur) || points[points.length - 1];
    show(selected);
    const subsets = points.filter((p) => p.scope === "subset").length;
    box.replaceChildren(chart, readout, el("p", { class: "legend" },
      el("span", { class: "l-lines", text: "lines" }), el("span", { class: "l-branches", text: "branches" }),
      el("span", { class: "l-functions", text: "functions" }),
      subsets ? el("span", { class: "l-subset", text: "subset run (" + subsets + "), not joined" }) : null,
      el("span", { class: "l-current", text: "current" }),
      d.selection.baseline ? el("span", { class: "l-baseline", text: "baseline" }) : null,
      points.some((p) => p.dirty) ? el("span", { class: "l-dirty", text: "+ uncommitted changes" }) : null,
      d.timeline.truncated ? el("span", { text: "(newest " + points.length + " snapshots)" }) : null));
  }

  function renderChange(d) {
    const c = d.change;
    if (!d.selection.baseline) { fill("change-body", note("Pick a baseline to see what changed.")); return; }
    if (!c || !c.available) { fill("change-body", note("No change review: " + (c ? c.reason : "no baseline") + ".")); return; }
    const words = d.category_words;
    const rows = CATEGORY_ORDER.map((code) => {
      const counts = COUNTERS.map((n) => (c.categories[n === "lines" ? "categories" : n] || {})[code] || 0);
      const cls = BAD.has(code) ? "cat-bad" : GOOD.has(code) ? "cat-good" : "";
      return el("tr", { id: "category-" + code },
        el("td", {}, el("abbr", { title: code, class: cls, text: words[code] })),
        el("td", { class: "muted", text: code }),
        ...counts.map((v) => el("td", { class: "num", text: v })));
    });
    const patch = c.patch || { hit: 0, found: 0 };
    const diff = c.diff || {};
    const summary = el("p", { id: "change-summary" },
      "Patch coverage: ", el("strong", { id: "patch-coverage", text: patch.found ? pct(ratio(patch.hit, patch.found)) : "no new lines" }),
      patch.found ? " (" + patch.hit + " of " + patch.found + " new lines covered)" : "",
      " · " + (diff.files_changed || 0) + " files changed, +" + (diff.lines_added || 0) + " −" + (diff.lines_removed || 0) + " lines",
      c.regression && c.regression.status !== "none" ? " · regression: " + c.regression.lines + " lines" : "");
    const table = el("table", { "aria-label": "lcov categories" },
      el("thead", {}, el("tr", {}, el("th", { text: "What happened" }), el("th", { text: "lcov" }),
        ...COUNTERS.map((n) => el("th", { class: "num", text: n })))),
      el("tbody", {}, rows));
    const files = el("table", { "aria-label": "Changed files" },
      el("thead", {}, el("tr", {}, el("th", { text: "Changed file" }), el("th", { text: "Status" }), el("th", { text: "Lines by category" }), el("th", { class: "num", text: "Patch" }))),
      el("tbody", {}, c.files.slice(0, 200).map((f) => el("tr", {},
        el("td", {}, el("button", { class: "link path", type: "button", "aria-label": f.path, onclick: () => showSource(f.path) }, pathParts(f.path))),
        el("td", { class: "status-word", text: STATUS_WORDS[f.status] || (f.status || "").replace(/_/g, " ") }),
        el("td", { text: Object.entries(f.lines || {}).map(([k, v]) => words[k] + ": " + v).join("; ") }),
        el("td", { class: "num", text: f.patch && f.patch.found ? f.patch.hit + "/" + f.patch.found : "" })))));
    const reasons = (c.reasons || []).map((r) => note(r));
    const outside = c.outside_scope && c.outside_scope.count ? note(outsideSentence(c.outside_scope, c.suite || d.suite)) : null;
    files.classList.add("path-list");
    fill("change-body", summary, reasons, outside, table, c.files.length ? files : note("No file changed."), incrementalBox(d));
  }
  // The incremental review (baseline ∪ current), asked when a person opens it: what a subset run kept, gained,
  // lost or did not observe; a managed run's attached review is drawn the same way (showLog).
  const GROUP_WORDS = [["kept", "kept: covered before and now"], ["gained", "gained: covered now, not before"],
    ["lost", "lost: covered before, not now"], ["not_observed", "not observed: outside what this (subset) run measured"],
    ["uncovered", "uncovered before and now"], ["added_covered", "new lines, covered"], ["added_uncovered", "new lines, not covered"],
    ["excluded", "excluded"], ["deleted", "deleted lines"]];
  function incrementalGroups(r, id) {
    if (!r || r.available === false) return note("No incremental review: " + (r ? r.reason : "none") + ".");
    const cats = r.categories || {};
    const tests = r.tests || {};
    return el("div", { id }, el("table", { class: "groups", "aria-label": "Incremental groups" },
      el("thead", {}, el("tr", {}, el("th", { text: "Group" }), el("th", { class: "num", text: "Lines" }))),
      el("tbody", {}, GROUP_WORDS.filter(([k]) => cats[k] !== undefined).map(([k, words]) => el("tr", { "data-group": k },
        el("td", { class: k === "lost" ? "cat-bad" : k === "gained" ? "cat-good" : "", text: words }), el("td", { class: "num", text: cats[k] }))))),
    note("Tests: " + (tests.common || 0) + " in both, " + ((tests.only_current || {}).count || 0) + " only now, " +
      ((tests.only_baseline || {}).count || 0) + " only before" + (r.regression && r.regression.status === "regression"
      ? " · regression: " + r.regression.lines + " lines lost" : "") + (r.claim_status ? " · claim " + r.claim_status : "") + "."),
    ...(r.reasons || []).map((x) => note(x)));
  }
  function incrementalBox(d) {
    if (staticData || !d.selection.baseline || !d.selection.current) return null;
    const box = el("details", { id: "incremental" }, el("summary", { text: "Incremental review: kept, gained, lost, not observed" }));
    let asked = false;
    box.addEventListener("toggle", async () => {
      if (!box.open || asked) return;
      asked = true;
      const q = new URLSearchParams({ snapshot: d.selection.current.snapshot_id, baseline: d.selection.baseline.snapshot_id });
      try { box.append(incrementalGroups((await row("dashboard_incremental", q)).data, "incremental-groups")); }
      catch (error) { box.append(note(error.message)); }
    });
    return box;
  }

  // A change's file status in plain words (the change review's enum).
  const STATUS_WORDS = { added: "added", modified: "changed", deleted: "deleted", renamed: "renamed", unchanged: "unchanged",
    not_measured: "not measured now", outside_scope: "outside the measured scope" };
  function outsideSentence(o, suite) {
    const n = o.count;
    return (n === 1 ? "1 changed file lies" : n + " changed files lie") + " outside what suite “" + suite +
      "” has ever measured, so " + (n === 1 ? "it does" : "they do") + " not count toward coverage" +
      (o.examples && o.examples.length ? " (" + o.examples.join(", ") + (n > o.examples.length ? ", …" : "") + ")" : "") + ".";
  }
  // A path that wraps only after its slashes, never inside a name.
  function pathParts(path) {
    const parts = path.split("/");
    return parts.flatMap((part, i) => i < parts.length - 1 ? [part + "/", el("wbr")] : [part]);
  }
  function fileValue(f, key) {
    if (key === "path") return f.path;
    const [counter, part] = key.split(".");
    const c = f[counter];
    if (part === "missed") return c.found - c.hit;
    const value = ratio(c.hit, c.found);
    return value === null ? -1 : value;
  }
  function counterCell(c) {
    return el("td", { class: "num", text: c.found ? pct(ratio(c.hit, c.found)) + " (" + c.hit + "/" + c.found + ")" : "—" });
  }
  // The table's columns, each with the server's sort (dashboard_files) and the direction of a first click.
  const COLUMNS = [["path", "File", "path", 1], ["lines.pct", "Lines", "lines", 1], ["lines.missed", "Missed lines", "missed", -1],
    ["branches.pct", "Branches", "branches", 1], ["functions.pct", "Functions", "functions", 1], ["headline.pct", "Total", "headline", 1]];
  const SORT_WORDS = { path: "by path", lines: "by line coverage", missed: "by missed lines", branches: "by branch coverage",
    functions: "by function coverage", headline: "by total coverage" };
  // What the file table shows: a page of the server's answer (live) or the embedded rows (the static report).
  const nav = { search: "", hide: false, dir: "", rows: null, matched: 0, total: 0, next: null, tree: null, asked: 0, view: "files" };
  function serverSort() { return COLUMNS.find((c) => c[0] === sortKey)[2]; }
  function sortFiles(key) {
    // first click: most missed lines first; the others start ascending
    sortDir = key === sortKey ? -sortDir : key === "lines.missed" ? -1 : 1;
    sortKey = key;
    focusSort = key;  // keep the keyboard's place
    const order = SERVER_ORDER[key];
    // the three orders the projection itself knows stay in the address (a reload or a link keeps them)
    if (!staticData) { state.order = order && sortDir === (key === "lines.missed" ? -1 : 1) ? order : ""; keepInAddress(); }
    // the rows shown are re-sorted at once; the server's answer (over every file) replaces them
    if (!nav.rows && !staticData) { nav.matched = nav.total = data.files.total; }
    const shown = nav.rows || (staticData ? null : data.files.rows.slice());
    if (shown) {
      shown.sort((a, b) => { const va = fileValue(a, sortKey), vb = fileValue(b, sortKey);
        return va < vb ? -sortDir : va > vb ? sortDir : a.path < b.path ? -1 : 1; });
      nav.rows = shown;
      drawFiles();
      focusSort = key;
    }
    askFiles();
  }
  function changeOf(path) {
    const c = data && data.change && data.change.available ? data.change.files.find((f) => f.path === path) : null;
    return c ? c.lines : null;
  }
  function fileRow(f) {
    const change = changeOf(f.path);
    return el("tr", { "data-path": f.path },
      el("td", {}, staticData && staticData.pages && staticData.pages[f.path]
        ? el("a", { class: "path", href: staticData.pages[f.path], "aria-label": f.path }, pathParts(f.path))  // the site's page
        : el("button", { class: "link path", type: "button", "aria-label": f.path, onclick: () => showSource(f.path) }, pathParts(f.path))),
      counterCell(f.lines),
      el("td", { class: "num", text: f.lines.found - f.lines.hit }),
      counterCell(f.branches),
      counterCell(f.functions),
      // the file's figure by the producing tool's rule, as it rounds it (coverage.py: statements and branches)
      el("td", { class: "num", text: f.headline && f.headline.found ? f.headline.text + " (" + f.headline.hit + "/" + f.headline.found + ")" : "—" }),
      el("td", { class: "muted", text: change ? Object.entries(change).map(([k, v]) => k + " " + v).join(", ") : "" }));
  }
  // The static report filters and sorts its embedded rows itself, by the same rules as the server.
  function localFiles(d) {
    const rows = d.files.rows.filter((f) => (!nav.dir || f.path.startsWith(nav.dir)) &&
      (!nav.search || f.path.toLowerCase().includes(nav.search.toLowerCase())) &&
      (!nav.hide || ["lines", "branches", "functions", "headline"].some((n) => f[n] && f[n].hit !== f[n].found)));
    rows.sort((a, b) => {
      const va = fileValue(a, sortKey), vb = fileValue(b, sortKey);
      return va < vb ? -sortDir : va > vb ? sortDir : a.path < b.path ? -1 : 1;
    });
    return rows;
  }
  function localTree(d) {
    const dirs = new Map();
    let here = 0;
    for (const f of d.files.rows) {
      if (nav.dir && !f.path.startsWith(nav.dir)) continue;
      const rest = f.path.slice(nav.dir.length);
      if (!rest.includes("/")) { here += 1; continue; }
      const name = rest.split("/")[0];
      const dir = dirs.get(name) || { name, path: nav.dir + name + "/", files: 0,
        lines: { hit: 0, found: 0 }, branches: { hit: 0, found: 0 }, functions: { hit: 0, found: 0 }, headline: { hit: 0, found: 0 } };
      dir.files += 1;
      for (const n of ["lines", "branches", "functions", "headline"]) { dir[n].hit += f[n].hit; dir[n].found += f[n].found; }
      dirs.set(name, dir);
    }
    return { dir: nav.dir, files_here: here, directories: Array.from(dirs.values()).sort((a, b) => (a.name < b.name ? -1 : 1)) };
  }
  function fileQuery(extra) {
    const q = new URLSearchParams({ snapshot: data.selection.current.snapshot_id, sort: serverSort(),
      descending: String(sortDir < 0), limit: "500", ...extra });
    if (nav.search) q.set("search", nav.search);
    if (nav.dir) q.set("dir", nav.dir);
    if (nav.hide) q.set("hide_covered", "true");
    return q;
  }
  async function row(name, q) {
    const response = await fetch("/api/projects/" + encodeURIComponent(data.project.project_id) + "/ops/" + name + "?" + q.toString(),
      { credentials: "same-origin", headers: { Accept: "application/json" } });
    const body = await response.json().catch(() => null);
    if (!response.ok) throw new Error(body && body.error ? body.error.message + ". " + body.error.suggestion : "error " + response.status);
    return body;
  }
  // Ask the server for the first page of files (and the directory's tree) as the controls now say; an answer
  // to an older question is dropped.
  async function askFiles(more) {
    if (!data || !data.files) return;
    if (staticData) { drawFiles(); return; }
    const asked = ++nav.asked;
    try {
      const [page, tree] = await Promise.all([row("dashboard_files", fileQuery(more ? { cursor: nav.next } : {})),
        more ? Promise.resolve(null) : row("dashboard_tree", new URLSearchParams({ snapshot: data.selection.current.snapshot_id, ...(nav.dir ? { dir: nav.dir } : {}) }))]);
      if (asked !== nav.asked) return;
      nav.rows = more ? nav.rows.concat(page.data.rows) : page.data.rows;
      nav.matched = page.data.matched; nav.total = page.data.total; nav.next = page.page && page.page.next_cursor;
      if (tree) nav.tree = tree.data;
      drawFiles();
    } catch (error) {
      if (asked === nav.asked) byId("files-more").textContent = "The file table could not be read: " + error.message;
    }
  }
  function renderFiles(d) {
    if (!d.files) { fill("files-body", note("No snapshot yet.")); fill("files-tree"); byId("files-more").textContent = ""; return; }
    // first from the projection's own page (drawn at once), then the server's answer to the controls
    nav.rows = null;
    drawFiles();
    if (!staticData) askFiles();
    if (nav.view === "functions") askFunctions();
  }
  function crumbs() {
    const parts = nav.dir ? nav.dir.replace(/\/$/, "").split("/") : [];
    const go = (dir) => () => { nav.dir = dir; askFiles(); };
    return [el("button", { type: "button", class: "link", "aria-current": parts.length ? null : "location", text: "all files", onclick: go("") }),
      ...parts.flatMap((part, i) => [" / ", el("button", { type: "button", class: "link",
        "aria-current": i === parts.length - 1 ? "location" : null, text: part, onclick: go(parts.slice(0, i + 1).join("/") + "/") })])];
  }
  function drawTree(tree) {
    if (!tree || !tree.directories.length) { fill("files-tree"); return; }
    const table = el("table", { id: "tree-table", class: "wrap", "aria-label": "Directories" + (nav.dir ? " under " + nav.dir : "") },
      el("thead", {}, el("tr", {}, ["Directory", "Files", "Lines", "Missed lines", "Branches", "Functions", "Total"].map((h, i) =>
        el("th", { class: i ? "num" : "", text: h })))),
      el("tbody", {}, tree.directories.map((dir) => el("tr", { "data-dir": dir.path },
        el("td", {}, el("button", { type: "button", class: "link path", text: dir.name + "/", onclick: () => { nav.dir = dir.path; askFiles(); } })),
        el("td", { class: "num", text: dir.files }), counterCell(dir.lines),
        el("td", { class: "num", text: dir.lines.found - dir.lines.hit }),
        counterCell(dir.branches), counterCell(dir.functions), counterCell(dir.headline)))));
    fill("files-tree", table);
  }
  function drawFiles() {
    const d = data;
    const server = nav.rows !== null;
    const rows = server ? nav.rows : staticData ? localFiles(d) : d.files.rows;
    fill("files-crumbs", crumbs());
    drawTree(server ? nav.tree : staticData ? localTree(d) : null);
    const table = el("table", { id: "files-table", "aria-label": "Files of the current snapshot" },
      el("thead", {}, el("tr", {}, COLUMNS.map(([key, label]) => el("th", {
        class: key === "path" ? "" : "num", "aria-sort": key === sortKey ? (sortDir > 0 ? "ascending" : "descending") : "none",
      }, el("button", { type: "button", "data-sort": key, text: label, onclick: () => sortFiles(key) }))),
      el("th", { text: "Change" }))),
      el("tbody", {}, rows.map(fileRow)));
    fill("files-body", rows.length ? table : note(nav.search || nav.hide || nav.dir ? "No file matches." : "No file."));
    const more = byId("files-more");
    const order = SORT_WORDS[serverSort()] + (sortDir < 0 ? ", largest first" : "");
    if (server) {
      const filtered = nav.matched !== nav.total ? " of " + nav.matched + " matching (" + nav.total + " in all)" : " of " + nav.total;
      more.replaceChildren("Showing " + rows.length + filtered + " files, " + order + ".",
        nav.next ? el("button", { type: "button", id: "files-next", class: "more", text: "Show the next 500", onclick: () => askFiles(true) }) : "");
    } else if (staticData) {
      more.textContent = "Showing " + rows.length + " of the " + d.files.rows.length + " files this report carries" +
        (d.files.truncated ? " (of " + d.files.total + "; the live dashboard has them all)" : "") + ", " + order + ".";
    } else {
      more.textContent = d.files.truncated ? "Showing " + rows.length + " of " + d.files.total + " files…" : "";
    }
    if (focusSort) { const b = table.querySelector('th button[data-sort="' + focusSort + '"]'); if (b) b.focus(); focusSort = null; }
  }

  // -- the function index: every file's, or the open file's -----------------------------------
  const fnav = { search: "", uncovered: false, sort: "line", desc: false, asked: 0 };
  // The static site's index: its embedded rows, filtered and sorted here by the server's rules.
  function localFunctions() {
    const all = staticData.functions || { rows: [], truncated: false };
    const key = { name: (f) => f.name, file: (f) => f.path, line: (f) => f.start_line, hits: (f) => f.hits }[fnav.sort];
    const rows = all.rows.filter((f) => (!nav.search || f.name.toLowerCase().includes(nav.search.toLowerCase())) && (!fnav.uncovered || !f.hits));
    rows.sort((x, y) => { const a = key(x), b = key(y); const c = a < b ? -1 : a > b ? 1 : x.path < y.path ? -1 : x.path > y.path ? 1 : x.start_line - y.start_line;
      return fnav.desc ? -c : c; });
    return { matched: rows.length, hit: rows.filter((f) => f.hits).length, rows: rows.slice(0, 500), truncated: rows.length > 500 || all.truncated };
  }
  async function askFunctions(file, into) {
    const target = into || byId("functions-body");
    if (staticData && (file || !staticData.functions)) { target.replaceChildren(note("The function index is in the live dashboard (coverage-mcp dashboard).")); return; }
    const asked = ++fnav.asked;
    let a;
    if (staticData) a = localFunctions();
    else {
      const q = new URLSearchParams({ snapshot: data.selection.current.snapshot_id, sort: fnav.sort, descending: String(fnav.desc), limit: "500" });
      if (file) q.set("file", file);
      if (!file && nav.search) q.set("search", nav.search);
      if (!file && fnav.uncovered) q.set("uncovered", "true");
      let answer;
      try { answer = await row("dashboard_functions", q); } catch (error) { target.replaceChildren(note(error.message)); return; }
      if (!file && asked !== fnav.asked) return;
      a = answer.data;
    }
    const head = [["name", "Function"], ["file", "File"], ["line", "Line"], ["hits", "Calls"]].filter(([k]) => !file || k !== "file");
    const table = el("table", { class: "wrap functions-table", "aria-label": file ? "Functions of " + file : "Functions of every file" },
      el("thead", {}, el("tr", {}, head.map(([key, label]) => el("th", { class: key === "line" || key === "hits" ? "num" : "",
        "aria-sort": !file && fnav.sort === key ? (fnav.desc ? "descending" : "ascending") : "none" },
      file ? label : el("button", { type: "button", "data-fsort": key, text: label, onclick: () => {
        fnav.desc = fnav.sort === key ? !fnav.desc : key === "hits" ? false : false; fnav.sort = key; askFunctions(); } }))))),
      el("tbody", {}, a.rows.map((f) => el("tr", { class: f.hits ? "" : "uncovered-fn" },
        el("td", {}, staticData && staticData.pages && staticData.pages[f.path]
          ? el("a", { class: "link", href: staticData.pages[f.path] + "#L" + f.start_line, text: f.name })  // the site's page, at the line
          : el("button", { type: "button", class: "link", text: f.name, onclick: () => showSource(f.path, f.start_line) })),
        file ? null : el("td", {}, pathParts(f.path)),
        el("td", { class: "num", text: f.start_line }), el("td", { class: "num" + (f.hits ? "" : " cat-bad"), text: f.hits })))));
    target.replaceChildren(note(a.matched + " functions, " + a.hit + " called" + (a.truncated ? "; the first " + a.rows.length + " shown" : "") + "."),
      a.rows.length ? table : note("No function matches."));
  }
  function showView(view) {
    nav.view = view;
    byId("show-files").setAttribute("aria-pressed", String(view === "files"));
    byId("show-functions").setAttribute("aria-pressed", String(view === "functions"));
    for (const id of ["files-crumbs", "files-tree", "files-body", "files-more"]) byId(id).hidden = view !== "files";
    byId("functions-body").hidden = view !== "functions";
    byId("files-hide").checked = view === "functions" ? fnav.uncovered : nav.hide;
    byId("files-hide").parentElement.lastChild.textContent = view === "functions" ? " Only never called" : " Hide fully covered";
    if (view === "functions") askFunctions();
  }

  // -- the annotated file, windowed: only the lines in view are asked for and drawn -----------------
  const LH = 18;  // one line's height in px (the CSS's .source .ln): the scroll box is file_lines × LH tall
  const CHUNK = 500;  // lines per request and per drawn piece
  function categoryAt(ranges, line) {  // ranges sorted by start: binary search
    let lo = 0, hi = ranges.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1, r = ranges[mid];
      if (line < r[1]) hi = mid - 1; else if (line > r[2]) lo = mid + 1; else return r[0];
    }
    return null;
  }
  function missedBlocks(lines) {  // the static report's blocks, from its embedded lines
    const blocks = [];
    let open = null;
    for (const line of lines) {
      const bad = line.status === "uncovered" || line.status === "partial";
      if (bad) { if (open && line.line === open[1] + 1) open[1] = line.line; else { open = [line.line, line.line]; blocks.push(open); } }
      else open = null;
    }
    return blocks;
  }
  let viewer = null;  // the open file: its chunks, outline and categories
  async function sourcePart(path, args) {
    const q = new URLSearchParams({ snapshot: data.selection.current.snapshot_id, file: path, ...args });
    return (await row("dashboard_source", q)).data;
  }
  async function showSource(path, atLine) {
    const box = byId("source");
    box.hidden = false;
    const v = viewer = { path, chunks: new Map(), asked: new Set(), blocks: null, ranges: null, at: -1, here: null, total: 0, drawn: "" };
    box.replaceChildren(el("header", {}, el("strong", { text: path }), el("span", { class: "muted", text: "loading…" })));
    let first;
    if (staticData) {
      const embedded = (staticData.sources || {})[path] || null;
      if (!embedded) { box.replaceChildren(el("header", {}, el("strong", { text: path })), note("This report does not carry this file's source.")); return; }
      first = { ...embedded, start: 1 };
      v.total = embedded.lines.length ? embedded.lines[embedded.lines.length - 1].line : 0;
      for (let k = 0; k * CHUNK < v.total; k += 1) v.chunks.set(k, embedded.lines.filter((l) => l.line > k * CHUNK && l.line <= (k + 1) * CHUNK));
      v.blocks = missedBlocks(embedded.lines);
      // the change categories the report was written with (against its baseline), as the live view asks them
      if (embedded.categories && embedded.categories.available) v.ranges = embedded.categories.ranges;
    } else {
      try { first = await sourcePart(path, { part: "lines", start: "1", count: String(CHUNK) }); }
      catch (error) { if (viewer === v) box.replaceChildren(el("header", {}, el("strong", { text: path })), note(error.message)); return; }
      if (viewer !== v) return;
      v.total = first.file_lines;
      v.chunks.set(0, first.lines);
      v.asked.add(0);
    }
    const close = el("button", { type: "button", text: "Close", onclick: () => { box.hidden = true; viewer = null; } });
    const pre = el("pre", { class: "rows" });
    const scroller = el("div", { class: "viewport", id: "source-text", tabindex: "0", role: "region",
      "aria-label": "Annotated source of " + path + "; n and p step through the missed blocks" },
    el("div", { class: "spacer", style: null }), pre);
    scroller.firstChild.style.height = (v.total * LH) + "px";
    v.pre = pre; v.scroller = scroller;
    const where = el("span", { class: "muted", id: "source-block", "aria-live": "polite", text: staticData ? "" : "finding the missed blocks…" });
    const prev = el("button", { type: "button", id: "source-prev", text: "↑ previous missed", onclick: () => { step(v, -1, where); scroller.focus(); } });
    const next = el("button", { type: "button", id: "source-next", text: "↓ next missed", onclick: () => { step(v, 1, where); scroller.focus(); } });
    scroller.addEventListener("keydown", (event) => {
      if (event.altKey || event.ctrlKey || event.metaKey) return;
      if (event.key === "n" || event.key === "j") { event.preventDefault(); step(v, 1, where); }
      if (event.key === "p" || event.key === "k") { event.preventDefault(); step(v, -1, where); }
    });
    let pending = false;
    scroller.addEventListener("scroll", () => { if (!pending) { pending = true; requestAnimationFrame(() => { pending = false; drawSource(v); }); } });
    const fns = el("details", { id: "source-functions" }, el("summary", { text: "Functions of this file" }));
    let askedFns = false;
    fns.addEventListener("toggle", () => { if (fns.open && !askedFns) { askedFns = true; const into = el("div"); fns.append(into); askFunctions(path, into); } });
    const tests = el("div", { id: "line-tests", class: "line-tests", hidden: true });
    const legend = "covered · partial (its missed branches named) · uncovered · excluded" + (data.selection.baseline && (!staticData || v.ranges) ? " · change against the baseline" : "");
    box.replaceChildren(el("header", {}, el("strong", { id: "source-path", text: path }),
      el("span", { class: "muted", text: legend + ", as measured at " + short(first.commit) }),
      el("span", { class: "stepper" }, prev, next, where), close),
      staticData ? null : fns, tests, scroller,
      note(v.total + " lines" + (staticData ? "" : "; click a line's number for the tests that ran it") + "."),
      ...(first.truncated ? [note("This report carries the first " + first.lines.length + " of " + first.file_lines +
        " lines; the live dashboard shows the whole file.")] : []),
      ...(first.reasons || []).map((r) => note(r)));
    pre.addEventListener("click", (event) => {
      const no = event.target.closest(".no");
      if (no && !staticData) lineTests(v, Number(no.parentElement.dataset.line), tests);
    });
    box.scrollIntoView({ block: "nearest" });
    drawSource(v);
    if (atLine) { jump(v, atLine, atLine); scroller.focus(); } else close.focus();
    if (!staticData) {
      sourcePart(path, { part: "outline" }).then((o) => {
        if (viewer !== v) return;
        v.blocks = o.blocks;
        where.textContent = v.blocks.length ? v.blocks.length + " missed blocks" : "no missed block";
      }).catch((error) => { where.textContent = error.message; });
      if (data.selection.baseline) {
        sourcePart(path, { part: "categories", baseline: data.selection.baseline.snapshot_id }).then((c) => {
          if (viewer !== v || !c.available) return;
          v.ranges = c.ranges; v.drawn = ""; drawSource(v);
        }).catch(() => {});
      }
    } else {
      where.textContent = v.blocks.length ? v.blocks.length + " missed blocks" : "no missed block";
    }
  }
  function jump(v, first, last) {
    v.here = [first, last];
    v.scroller.scrollTop = Math.max(0, (first - 4) * LH);
    v.drawn = "";
    drawSource(v);
  }
  function step(v, by, where) {
    if (!v.blocks || !v.blocks.length) return;
    v.at = (v.at + by + v.blocks.length) % v.blocks.length;
    const [first, last] = v.blocks[v.at];
    jump(v, first, last);
    where.textContent = "missed block " + (v.at + 1) + " of " + v.blocks.length + ": lines " + first + (last > first ? "–" + last : "");
  }
  // Draw the chunks in view (and one either side); ask for the ones not read yet.
  function drawSource(v) {
    if (viewer !== v) return;
    const top = Math.floor(v.scroller.scrollTop / LH) + 1;
    const bottom = top + Math.ceil((v.scroller.clientHeight || 520) / LH);
    const from = Math.max(0, Math.floor((top - 1 - 100) / CHUNK)), to = Math.floor((bottom - 1 + 100) / CHUNK);
    for (let k = from; k <= to; k += 1) {
      if (k * CHUNK >= v.total || v.chunks.has(k) || v.asked.has(k) || staticData) continue;
      v.asked.add(k);
      sourcePart(v.path, { part: "lines", start: String(k * CHUNK + 1), count: String(CHUNK) }).then((w) => {
        v.chunks.set(k, w.lines); v.drawn = ""; drawSource(v);
      }).catch(() => v.asked.delete(k));
    }
    let start = from;
    while (start <= to && !v.chunks.has(start)) start += 1;
    let end = start;
    while (end + 1 <= to && v.chunks.has(end + 1)) end += 1;
    const key = start + ":" + end;
    if (key === v.drawn || start > to) return;
    v.drawn = key;
    const lines = [];
    for (let k = start; k <= end; k += 1) lines.push(...v.chunks.get(k));
    v.pre.style.top = (start * CHUNK) * LH + "px";
    v.pre.replaceChildren(...lines.map((line) => {
      // only code lines have a category (a range spans the blank lines between its code lines); a code line in no
      // range is unchanged code: CBC when it runs now (a partial line runs: lcov counts its hits), UBC when not
      const code = line.status === "covered" || line.status === "partial" || line.status === "uncovered";
      const cat = v.ranges && code ? categoryAt(v.ranges, line.line) || (line.status === "uncovered" ? "UBC" : "CBC") : null;
      const here = v.here && line.line >= v.here[0] && line.line <= v.here[1];
      return el("span", { class: "ln " + line.status.replace(" ", "-") + (here ? " here" : "") + (cat && BAD.has(cat) ? " k-bad" : cat && GOOD.has(cat) ? " k-good" : ""),
        title: line.status, "data-line": line.line, "data-cat": cat, "data-missed": line.missed ? line.missed.join(", ") : null,
        "aria-description": line.missed ? "missed branches " + line.missed.join(", ") : null },
      el("span", { class: "no", text: line.line }), line.text);
    }));
  }
  async function lineTests(v, line, box, cursor, shown) {
    box.hidden = false;
    const q = new URLSearchParams({ snapshot: data.selection.current.snapshot_id, file: v.path, line: String(line), limit: "50" });
    if (cursor) q.set("cursor", cursor);
    let answer;
    try { answer = await row("dashboard_line_tests", q); } catch (error) { box.replaceChildren(note(error.message)); return; }
    const a = answer.data, names = (shown || []).concat(a.tests);
    const more = answer.page && answer.page.next_cursor;
    box.replaceChildren(el("header", {}, el("strong", { id: "line-tests-title", text: "Line " + line + ": " +
      (a.named_tests ? a.total + " named tests ran it" : "this snapshot has no named tests") }),
    el("button", { type: "button", text: "Close", onclick: () => { box.hidden = true; } })),
    names.length ? el("ul", { id: "line-tests-list", class: "wrap" }, names.map((n) => el("li", {}, el("code", { text: n })))) : null,
    more ? el("button", { type: "button", id: "line-tests-more", text: "Show more", onclick: () => lineTests(v, line, box, more, names) }) : null);
  }

  function renderTests(d) {
    const t = d.tests;
    if (!t) { fill("tests-body", note("No snapshot yet.")); return; }
    if (!t.count) { fill("tests-body", note("This snapshot has no named tests (per-test contexts or LCOV TN: sections).")); return; }
    const fns = t.functions || { items: t.named.map((n) => ({ function: n.name, cases: 1, items: n.items, shown: [] })), count: t.named.length };
    const itemsHit = () => el("abbr", { title: "lines, branches and functions the test hit (its case that hit the most)", text: "Items hit" });
    // One row per test function; a parametrised one opens onto its cases (parameters and phase), each with its items.
    const named = el("table", { id: "tests-table", class: "wrap", "aria-label": "Named tests by test function" },
      el("thead", {}, el("tr", {}, el("th", { text: "Test" }), el("th", { class: "num", text: "Cases" }), el("th", { class: "num" }, itemsHit()))),
      el("tbody", {}, fns.items.map((f) => el("tr", { "data-function": f.function },
        el("td", {}, f.cases > 1 ? el("details", {}, el("summary", { text: f.function }),
          el("ul", { class: "cases" }, f.shown.map((c) => el("li", {}, el("code", { text: c.case || c.name }), " ",
            el("span", { class: "muted", text: c.items + " items" }))),
          f.cases_truncated ? el("li", { class: "muted", text: "and " + (f.cases - f.shown.length) + " more cases" }) : null))
          : f.function),
        el("td", { class: "num", text: f.cases }),
        el("td", { class: "num", text: f.items })))));
    const groups = t.duplicate_families || [];
    const dups = groups.length ? el("ul", { id: "duplicates", class: "wrap" }, groups.map((g) => el("li", {},
      el("strong", { text: g.tests + " tests" }), " cover the same " + g.item_count + " items:",
      el("ul", {}, g.functions.map((f) => el("li", {}, el("code", { text: f.function }),
        f.cases.length ? el("span", { class: "muted", text: " · " + f.count + (f.count === 1 ? " case: " : " cases: ") +
          f.cases.slice(0, 8).join(" ") + (f.cases.length > 8 ? " … and " + (f.cases.length - 8) + " more" : "") }) : null))))))
      : note("No duplicate candidates: no two tests cover exactly the same items.");
    const cut = [fns.truncated ? "the first " + fns.items.length + " of " + fns.count + " test functions" : null,
      t.duplicates_truncated ? "the first " + groups.length + " duplicate groups" : null].filter(Boolean);
    fill("tests-body", el("p", { id: "tests-summary", text: t.count + " named tests in " + fns.count + " test functions · " +
        t.duplicate_groups + (t.duplicate_groups === 1 ? " group" : " groups") + " of duplicate candidates" + (fns.rule ? " · grouped by " + fns.rule : "") }),
      cut.length ? note("Showing " + cut.join(" and ") + "; coverage-mcp review tests pages through the rest.") : null,
      el("div", { class: "two" }, el("div", { class: "scroll" }, named), el("div", {}, el("h3", { text: "Duplicate candidates" }), dups)));
  }

  function generic(section, id, columns) {
    if (!section) { fill(id, note("Not available.")); return false; }
    if (!section.available) { fill(id, note(section.reason || "Not available.")); return false; }
    if (!section.items || !section.items.length) { fill(id, note(section.empty || "Nothing here.")); return false; }
    fill(id, el("table", {}, el("thead", {}, el("tr", {}, columns.map(([, label]) => el("th", { text: label })))),
      el("tbody", {}, section.items.map((item) => el("tr", {}, columns.map(([key]) => el("td", { text: item[key] === undefined || item[key] === null ? "" : String(item[key]) })))))));
    return true;
  }
  function renderRuns(section) {
    if (!section || !section.available || !section.items || !section.items.length) { generic(section, "runs-body", []); return; }
    const table = el("table", { id: "runs-table", "aria-label": "Managed runs" },
      el("thead", {}, el("tr", {}, ["Run", "State", "Command", "Arguments", "Started", "Took", "Exit", ""].map((h) => el("th", { text: h })))),
      el("tbody", {}, section.items.map((r) => el("tr", { "data-run": r.run_id },
        el("td", {}, el("code", { text: r.run_id })), el("td", { text: r.status + (r.reason ? " (" + r.reason + ")" : "") }),
        el("td", {}, r.command_name ? el("span", { title: r.command_id, text: r.command_name }) : el("code", { text: r.command_id })),
        el("td", {}, el("code", { text: r.args })),
        el("td", { text: when(r.started_at || r.queued_at || "") }),
        el("td", { class: "num", text: r.duration_ms === null || r.duration_ms === undefined ? "" : (r.duration_ms / 1000).toFixed(1) + " s" }),
        el("td", { class: "num", text: r.exit_code === null || r.exit_code === undefined ? "" : r.exit_code }),
        el("td", {}, el("button", { type: "button", class: "link", text: "Log", onclick: () => showLog(r.run_id) }))))));
    fill("runs-body", table, section.truncated ? note("The newest " + section.items.length + " runs.") : null,
      el("div", { id: "run-log", class: "source", hidden: true }));
    if (openLog && section.items.some((r) => r.run_id === openLog)) showLog(openLog, true);  // a refresh keeps it open
  }
  let openLog = null;  // the run whose log a person opened: shown again after each refresh until closed
  async function showLog(runId, refresh = false) {
    openLog = runId;
    const box = byId("run-log");
    box.hidden = false;
    let body = null;
    if (staticData) {
      body = (staticData.run_logs || {})[runId] || null;
    } else {
      const q = new URLSearchParams({ project: data.project.project_id, run: runId });
      const response = await fetch("/api/dashboard/run?" + q.toString(), { credentials: "same-origin" });
      const answer = await response.json().catch(() => null);
      body = response.ok && answer ? answer.data : null;
    }
    const close = el("button", { type: "button", text: "Close", onclick: () => { box.hidden = true; openLog = null; } });
    if (!body) { box.replaceChildren(el("header", {}, el("strong", { text: runId }), close), note("This log is not available here.")); return; }
    const text = body.text.map((part) => (body.text.length > 1 ? "── " + part.stream + " ──\n" : "") + part.text).join("\n");
    box.replaceChildren(...[el("header", {}, el("strong", { id: "run-log-id", text: runId + " · " + body.run.state }), close),
      el("pre", { id: "run-log-text", tabindex: "0", "aria-label": "Output of " + runId, text: text || "(no output)" }),
      body.more ? note("More output: coverage-mcp runs show " + runId + " --logs") : null,
      body.run && body.run.incremental_review ? el("h3", { text: "The run's incremental review" }) : null,
      body.run && body.run.incremental_review ? incrementalGroups(body.run.incremental_review, "run-review") : null].filter(Boolean));
    if (!refresh) close.focus();  // a refresh never moves the focus
  }
  // Everything the approval binds, exactly as `coverage-mcp command show` prints it: the projection's display
  // lines (execution.display, the CLI's own function), one quoted word per line, every control, format,
  // non-ASCII character and run of spaces escaped, so nothing in a registration can hide another part of it.
  function commandDetails(item) {
    return el("pre", { class: "registration", tabindex: "0", "aria-label": "Registration of " + item.command_id,
      text: (item.display || []).join("\n") });
  }
  let approvalFocus = null;  // after an approval: the row index whose button takes the focus next
  let confirming = null;  // the command whose approval waits for its confirmation (kept across refreshes)
  function approvalAction(item, index) {
    const cell = el("td", { class: "approve-cell" });
    const ask = () => {
      confirming = item.command_id;
      const confirm = el("button", { type: "button", class: "confirm", text: "Confirm approve " + item.command_id,
        onclick: (event) => decide("command_approve", item.command_id, event.target, index) });
      const cancel = el("button", { type: "button", class: "cancel", text: "Cancel", onclick: () => { confirming = null; start(); cell.querySelector("button.approve").focus(); } });
      cell.replaceChildren(el("p", { class: "confirm-question", text: "Let agents run exactly this command?" }), confirm, " ", cancel);
      confirm.focus();
    };
    const refuse = () => {
      confirming = "reject:" + item.command_id;
      const confirm = el("button", { type: "button", class: "confirm", text: "Confirm reject " + item.command_id,
        onclick: (event) => decide("command_reject", item.command_id, event.target, index) });
      const cancel = el("button", { type: "button", class: "cancel", text: "Cancel", onclick: () => { confirming = null; start(); cell.querySelector("button.reject").focus(); } });
      cell.replaceChildren(el("p", { class: "confirm-question", text: "Refuse this command? Agents cannot run it." }), confirm, " ", cancel);
      confirm.focus();
    };
    const start = () => cell.replaceChildren(el("button", { type: "button", class: "approve", text: "Approve…",
      "aria-label": "Approve " + (item.name || item.command_id) + "…", onclick: ask }), " ",
    el("button", { type: "button", class: "reject", text: "Reject…", "aria-label": "Reject " + (item.name || item.command_id) + "…", onclick: refuse }));
    if (staticData) cell.append(el("span", { class: "muted", text: "approve from the live dashboard" }));
    else if (confirming === item.command_id) ask(); else if (confirming === "reject:" + item.command_id) refuse(); else start();
    return cell;
  }
  function renderApprovals(section) {
    // a refresh re-draws the table: the focus stays on the same command's button (never lost to the page)
    const active = document.activeElement;
    const had = active && byId("approvals-body").contains(active) && active.closest("tr") ?
      { command: active.closest("tr").dataset.command, cls: active.className } : null;
    if (!section || !section.available || !section.items || !section.items.length) {
      generic(section, "approvals-body", []);
    } else {
      fill("approvals-body", el("table", { id: "approvals-table", "aria-label": "Commands waiting for approval" },
        el("thead", {}, el("tr", {}, ["Command", "Runs exactly", "Registered", ""].map((h) => el("th", { text: h })))),
        el("tbody", {}, section.items.map((item, index) => el("tr", { "data-command": item.command_id },
          el("td", {}, el("strong", { text: item.name || item.command_id }), el("br"), el("code", { class: "muted", text: item.command_id })),
          el("td", {}, commandDetails(item)),
          el("td", { text: when(item.created_at || "") }),
          approvalAction(item, index))))));
    }
    if (approvalFocus !== null) {  // keep the keyboard's place: the next pending command, else the heading
      const buttons = document.querySelectorAll("#approvals-table button.approve");
      const next = buttons[Math.min(approvalFocus, buttons.length - 1)];
      (next || byId("h-approvals")).focus();
      approvalFocus = null;
    } else if (had) {
      const row = Array.from(document.querySelectorAll("#approvals-table tbody tr")).find((tr) => tr.dataset.command === had.command);
      const target = row ? (row.querySelector("button." + had.cls) || row.querySelector("button"))
        : document.querySelector("#approvals-table button.approve");
      (target || byId("h-approvals")).focus();
    }
  }
  // A person's write: a row of the operation table that admits a session only with its CSRF token.
  async function write(name, body) {
    const token = document.querySelector('meta[name="csrf-token"]').getAttribute("content");
    const response = await fetch("/api/projects/" + encodeURIComponent(data.project.project_id) + "/ops/" + name, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "x-coverage-mcp-csrf": token },
      body: JSON.stringify(body),
    });
    const answer = await response.json().catch(() => null);
    return { ok: response.ok, status: response.status, answer };
  }
  async function decide(name, commandId, button, index) {
    button.disabled = true;
    const verb = name === "command_approve" ? "Approved" : "Rejected";
    // command_approve and command_reject: a session with its CSRF token is the principal they admit besides the CLI
    const { ok, status, answer } = await write(name, { command_id: commandId });
    if (!ok) {
      button.disabled = false;
      byId("approvals-status").textContent = "Not " + verb.toLowerCase() + ": " + (answer && answer.error ? answer.error.message : "(" + status + ")");
      return;
    }
    byId("approvals-status").textContent = verb + " " + commandId + ".";
    confirming = null;
    approvalFocus = index;
    load();
  }
  function bytes(n) {
    if (n === null || n === undefined) return "";
    return n >= 1048576 ? (n / 1048576).toFixed(1) + " MiB" : n >= 1024 ? (n / 1024).toFixed(1) + " KiB" : n + " B";
  }
  function renderCompaction(section) {
    if (!generic(section, "compaction-body", [["kind", "What"], ["count", "Snapshots"], ["size", "Stored"], ["detail", "Before"]])) return;
    const body = byId("compaction-body");
    const table = body.querySelector("table");
    table.id = "compaction-table";
    table.querySelectorAll("tbody tr").forEach((tr, i) => {
      const item = section.items[i];
      tr.children[2].textContent = bytes(item.bytes);
      tr.children[3].textContent = item.detail_bytes ? bytes(item.detail_bytes) + " of detail rows" : "";
    });
    const policy = section.policy || {};
    const last = section.last_pass;
    body.append(
      note("Policy: " + Object.entries(policy).map(([k, v]) => k.replace(/_/g, " ") + " " + v).join(", ") +
        (section.ratio ? " · compacted detail is " + section.ratio + "× smaller" : "")),
      note(last ? "Last pass " + when(last.finished_at) + " (" + last.trigger + "): " + last.compacted + " compacted, " +
        last.left + " left" : "No compaction pass yet."),
      section.inconsistent && section.inconsistent.length
        ? note("Inconsistent (payload and detail rows both present): " + section.inconsistent.join(", ")) : document.createTextNode(""),
      settingsForm(section), retentionTable(data));
  }
  let settingsSaid = "";
  // The compaction policy, edited by a person (project_settings_update with the session's CSRF token).
  function settingsForm(section) {
    if (staticData || !section.settings) return null;
    const inputs = section.settings.map((s) => el("label", { title: s.help }, s.key.replace(/^compaction_/, "").replace(/_/g, " ") + " ",
      el("input", { type: "number", name: s.key, value: s.value, min: s.low, max: s.high, step: 1, required: true })));
    const said = el("span", { id: "settings-status", role: "status", "aria-live": "polite", class: "note", text: settingsSaid });
    // the server checks every value (the setting's own range and words); the browser's checks are only hints
    const form = el("form", { id: "settings-form", class: "filters", "aria-label": "Compaction policy", novalidate: true },
      el("strong", { text: "Policy" }), inputs, el("button", { type: "submit", class: "approve", text: "Save policy" }), said);
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const settings = {};
      for (const s of section.settings) settings[s.key] = Number(form.elements[s.key].value);
      const { ok, status, answer } = await write("project_settings_update", { settings });
      // kept across the refresh a save causes (the form is drawn again from the stored policy)
      settingsSaid = said.textContent = ok ? "Saved." : "Not saved: " + (answer && answer.error ? answer.error.message + ". " + answer.error.suggestion : "(" + status + ")");
      if (ok) load();
    });
    return form;
  }
  const RETENTION_WORDS = { compacted: "compacted", protected: "protected", eligible: "eligible: the next pass compacts it", kept: "kept" };
  function retentionWords(r) {
    if (!r) return "";
    return r.age_days + " days old (policy " + r.after_days + ") · " + RETENTION_WORDS[r.state] +
      (r.why ? " (" + r.why + ")" : "") + (r.days_left !== null && r.days_left !== undefined ? " (" + r.days_left + " days left)" : "");
  }
  function retentionTable(d) {
    const points = d.timeline.points.slice().reverse().filter((p) => p.retention);
    if (!points.length) return null;
    return el("details", { id: "retention" }, el("summary", { text: "Retention of each measurement (" + points.length + ")" }),
      el("table", { id: "retention-table", class: "wrap", "aria-label": "Retention of each measurement" },
        el("thead", {}, el("tr", {}, ["Snapshot", "Commit", "Age", "Retention"].map((h) => el("th", { text: h })))),
        el("tbody", {}, points.map((p) => el("tr", { "data-snapshot": p.snapshot_id, "data-state": p.retention.state },
          el("td", {}, el("code", { text: p.snapshot_id })), el("td", { text: short(p.commit) }),
          el("td", { class: "num", text: p.retention.age_days + " d" }),
          el("td", { text: RETENTION_WORDS[p.retention.state] + (p.retention.why ? " (" + p.retention.why + ")" : "") +
            (p.retention.state === "kept" ? " (" + p.retention.days_left + " of " + p.retention.after_days + " days left)" : "") }))))));
  }
  function compositeLabel(c) {
    return c.composite_snapshot_id.slice(5, 13) + " · " + short(c.commit) + " · " + when(c.created_at).slice(0, 16) +
      " · " + pct(c.percent) + " · " + c.status;
  }
  function renderComposite(section) {
    if (!section || !section.available) { generic(section, "composite-body", []); return; }
    const cur = section.current;
    if (!cur) { fill("composite-body", note(section.empty)); return; }
    const base = section.baseline;
    const choices = section.choices.map((c) => [c.composite_snapshot_id, compositeLabel(c)]);
    const pickCur = el("select", { id: "pick-composite", disabled: !!staticData });
    options(pickCur, choices, cur.composite_snapshot_id);
    pickCur.addEventListener("change", (event) => choose("composite", event.target.value));
    const pickBase = el("select", { id: "pick-composite-baseline", disabled: !!staticData });
    options(pickBase, [["none", "none (no comparison)"], ...choices], base ? base.composite_snapshot_id : "none");
    pickBase.addEventListener("change", (event) => choose("composite_baseline", event.target.value));
    const combined = cur.totals.combined;
    // a delta only where both sides count the same members; otherwise the server withholds it and says why
    const delta = section.delta_withheld ? "delta withheld: " + section.delta_withheld.detail
      : section.delta === null || section.delta === undefined ? (base ? "no delta" : "no baseline")
      : (section.delta > 0 ? "+" : section.delta < 0 ? "−" : "±") + Math.abs(section.delta).toFixed(2) +
        " points vs baseline (" + pct(base.percent) + ")";
    const headline = el("div", { class: "card composite-card", id: "composite-headline" },
      el("h3", { text: "Production regions, all components" }),
      el("p", { class: "percent", text: pct(cur.percent) }),
      el("p", { class: "counts", text: combined.hit + " of " + combined.found + " covered · " + cur.status +
        (cur.denominator_known ? "" : " · denominator unknown") }),
      el("p", { class: "delta " + (section.delta > 0 ? "up" : section.delta < 0 ? "down" : ""), text: delta,
        "data-withheld": section.delta_withheld ? section.delta_withheld.reason : null }));
    const components = el("table", { id: "composite-components", "aria-label": "Components" },
      el("thead", {}, el("tr", {}, ["Component", "Language", "Format", "Variants", "Coverage", "Measured entries"].map((h, i) =>
        el("th", { class: i === 4 ? "num" : "", text: h })))),
      el("tbody", {}, section.items.map((c) => el("tr", { "data-component": c.component },
        el("td", { text: c.component }), el("td", { text: c.language }), el("td", { text: c.format }),
        el("td", { text: c.variants }),
        el("td", { class: "num", text: c.found ? pct(c.percent) + " (" + c.hit + "/" + c.found + ")" : "—" }),
        el("td", { text: c.measured })))));
    const blocking = section.blocking.length
      ? el("ul", { id: "composite-blocking" }, section.blocking.map((b) => el("li", {},
          el("strong", { text: b.component + (b.variant && b.variant !== "default" ? ":" + b.variant : "") + " " }),
          (b.logical_source_id || "") + ": " + b.reason + (b.detail ? " (" + b.detail + ")" : ""))))
      : note("Nothing blocks: every inventory entry has usable evidence.");
    const buckets = Object.entries(section.remediation || {}).filter(([, items]) => items.length).map(([bucket, items]) =>
      el("li", {}, el("strong", { text: bucket + ": " }), items.map((i) =>
        [i.component, i.variant, i.logical_source_id || (i.examples || []).join(", ")].filter(Boolean).join(" ") +
        (i.uncovered !== undefined ? " (" + i.uncovered + " of " + i.found + " uncovered)" : "") +
        (i.reason ? " (" + i.reason + ")" : "")).join("; ")));
    fill("composite-body",
      el("div", { class: "pickers composite-pickers" },
        el("label", {}, "Composite ", pickCur), el("label", {}, "Composite baseline ", pickBase)),
      el("div", { class: "two" }, headline, el("div", {},
        el("h3", { text: "Blocking reasons" + (section.blocking_total > section.blocking.length ? " (first " + section.blocking.length + " of " + section.blocking_total + ")" : "") }),
        blocking, buckets.length ? el("h3", { text: "What to do next" }) : null, buckets.length ? el("ul", {}, buckets) : null)),
      components);
  }

  // -- wiring ---------------------------------------------------------------------------------
  let drawnWidth = 0;  // the timeline is redrawn when its box changes width (a rotated phone, a resized window)
  window.addEventListener("resize", () => {
    const width = byId("timeline-chart").clientWidth;
    if (data && width !== drawnWidth) { drawnWidth = width; renderTimeline(data); }
  });
  const pickers = { "pick-project": "project", "pick-suite": "suite", "pick-current": "current", "pick-baseline": "baseline" };
  for (const [id, key] of Object.entries(pickers)) byId(id).addEventListener("change", (event) => choose(key, event.target.value));
  let searching = null;  // typing asks once the person pauses
  byId("files-search").addEventListener("input", (event) => {
    clearTimeout(searching);
    searching = setTimeout(() => { nav.search = event.target.value; if (nav.view === "functions") askFunctions(); else askFiles(); }, 200);
  });
  byId("files-hide").addEventListener("change", (event) => {
    if (nav.view === "functions") { fnav.uncovered = event.target.checked; askFunctions(); } else { nav.hide = event.target.checked; askFiles(); }
  });
  byId("files-filters").addEventListener("submit", (event) => event.preventDefault());
  byId("show-files").addEventListener("click", () => showView("files"));
  byId("show-functions").addEventListener("click", () => showView("functions"));
  load();
})();
