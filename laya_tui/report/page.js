// laya-tui --html: draws the page data embedded in the page (report/views/page.py formats
// every text, sort value and detail section; this script only lays them out).
"use strict";
const D = JSON.parse(document.getElementById("laya-data").textContent);
const S = D.strings;  // the texts of the signal tables and details (report/views/packed.py)
const app = document.getElementById("app");
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v); else e.setAttribute(k, v);
  }
  for (const k of kids.flat()) if (k !== null && k !== undefined && k !== "")
    e.append(k instanceof Node ? k : String(k));
  return e;
}
// null (absent) first, then numbers, then text
function cmp(a, b) {
  const ra = a === null ? 0 : typeof a === "number" ? 1 : 2, rb = b === null ? 0 : typeof b === "number" ? 1 : 2;
  if (ra !== rb) return ra - rb;
  return a < b ? -1 : a > b ? 1 : 0;
}
function low(v) { return typeof v === "string" ? v.toLowerCase() : v; }

// -- detail sections -------------------------------------------------------------------------
function facts(rows) {
  const dl = el("dl", {class: "kv"});
  for (const [k, v] of rows) dl.append(el("dt", {}, k), el("dd", {}, v.includes("\n") ? el("pre", {class: "wrap"}, v) : v));
  return dl;
}
function numbered(text, start, marks) {
  const pre = el("pre", {class: "excerpt"});
  text.replace(/\n$/, "").split("\n").forEach((line, i) => {
    const n = start + i, row = String(n).padStart(5) + "  " + line + "\n";
    pre.append(marks.has(n) ? el("span", {class: "hl"}, row) : row);
  });
  return pre;
}
function plot(points, first) {
  const W = 760, H = 180, P = 36, xs = points.map(p => p[0]);
  const ys = points.flatMap(p => [p[1], p[2]]).filter(v => v > 0);
  const lo = Math.log10(Math.min(...ys)), hi = Math.log10(Math.max(...ys)), x0 = Math.min(...xs), x1 = Math.max(...xs);
  const X = x => P + (x - x0) / Math.max(1, x1 - x0) * (W - 2 * P);
  const Y = v => H - P / 2 - (Math.log10(Math.max(v, 10 ** lo)) - lo) / Math.max(1e-9, hi - lo) * (H - P);
  const ns = "http://www.w3.org/2000/svg", svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`); svg.setAttribute("class", "plot");
  const line = (pts, cls) => { const l = document.createElementNS(ns, "polyline");
    l.setAttribute("points", pts.map(([x, y]) => X(x) + "," + Y(y)).join(" ")); l.setAttribute("class", cls); svg.append(l); };
  line(points.map(p => [p[0], p[2]]), "limit"); line(points.map(p => [p[0], p[1]]), "diff");
  if (first !== null) { const v = document.createElementNS(ns, "line");
    for (const [k, val] of [["x1", X(first)], ["x2", X(first)], ["y1", P / 4], ["y2", H - P / 4]]) v.setAttribute(k, val);
    v.setAttribute("class", "first"); svg.append(v); }
  return svg;
}
// a table sortable by each column (click a header; again: the other way); keys: sort values
function sortable(cols, rows, keys) {
  const body = el("tbody"), order = rows.map((_, i) => i);
  let by = -1, dir = 1;
  const draw = () => body.replaceChildren(...order.map(i => el("tr", {}, ...rows[i].map(c => el("td", {}, c)))));
  const heads = cols.map((c, j) => el("th", {class: "sort", title: "sort by " + c, onclick: () => {
    const numeric = keys.some(k => typeof k[j] === "number");
    dir = by === j ? -dir : (numeric ? -1 : 1); by = j;
    order.sort((a, b) => dir * cmp(low(keys[a][j]), low(keys[b][j])) || a - b); draw();
  }}, c));
  draw();
  return el("table", {class: "sortable"}, el("thead", {}, el("tr", {}, ...heads)), body);
}
// a packed detail [shape, text ids...] -> its sections, as views/packed.py's sections()
function unpack(packed) {
  let at = 1;
  const next = () => S[packed[at++]];
  return D.shapes[packed[0]].map(t => {
    if (t[0] === "f") return ["f", t[1], t[2].map(label => [label, next()])];
    if (t[0] === "src") return ["src", t[1], next(), next()];
    if (t[0] === "b") return ["b", t[1], next(), t[2], t[3]];
    if (t[0] === "file") return ["file", t[1], next(), next(), t[2]];
    return t;  // log, plot, table: all in the shape
  });
}
function section(sec, ctx) {
  const [type, title] = sec, head = title ? el("h4", {}, title) : null;
  if (type === "f") return [head, facts(sec[2])];
  if (type === "b") return [head, el("pre", {class: "wrap" + (sec[4] ? " dim" : "")}, sec[2])];
  if (type === "log") { const text = ctx.logs[sec[2]]; return text ? [head, el("pre", {class: "wrap dim"}, text)] : []; }
  if (type === "src") {
    const ex = D.excerpts[sec[3]], h = el("h4", {}, title + "  ", el("code", {}, sec[2]));
    if (ex === undefined) return [h];
    if (ex === null) return [h, el("p", {class: "dim"}, "(source not readable where this page was written: " + sec[3].replace(/:\d+$/, "") + ")")];
    return [h, numbered(ex.text, ex.start, new Set([ex.line]))];
  }
  if (type === "file") {
    const f = D.files[sec[3]], h = el("h4", {}, title + "  ", el("code", {}, sec[2]));
    if (f === undefined) return [h];
    if (f === null) return [h, el("p", {class: "dim"}, "(not readable where this page was written)")];
    const more = f.total > f.text.split("\n").length ? el("p", {class: "dim"}, "… " + (f.total - f.text.split("\n").length) + " more lines in the file") : null;
    return [h, numbered(f.text, 1, new Set(f.hl)), more];
  }
  if (type === "plot") return [head, plot(sec[2], sec[3])];
  if (type === "table") return [head, sortable(sec[2], sec[3], sec[4])];
  return [];
}
const detail = el("section", {id: "detail", hidden: true});
function showDetail(title, badge, failingNow, sections, ctx, subject) {
  detail.replaceChildren(el("h3", {}, el("span", {class: "badge " + (failingNow ? "fail" : "kind")}, badge), "  ", title),
    ...sections.flatMap(s => section(s, ctx)).filter(x => x !== null && x !== undefined));
  detail.hidden = false;
  detail.dataset.subject = subject;
  detail.scrollIntoView({block: "nearest"});
}
const KIND = 0, SUBJECT = 1;  // columns of the signal table (views/signals.py COLUMNS)
function openSignal(ctx, i) {
  if (!(i >= 0 && i < ctx.n)) return;
  showDetail(ctx.cell(i, SUBJECT) + "   " + ctx.probes[ctx.probeOf[i]], ctx.cell(i, KIND), ctx.table.failing[i],
    unpack(ctx.table.details[i]), ctx, "signal:" + i);
}
function openProbe(pi) {
  const p = D.probes[pi];
  showDetail(p[0], p[2], p[8], unpack(p[9]), MAIN, "probe:" + p[0]);
}
// a matrix cell opens its signal's row (a number) or its probe ("p3")
function open(ctx, to) { if (typeof to === "string") openProbe(+to.slice(1)); else openSignal(ctx, to); }

// -- sections ----------------------------------------------------------------------------
function header() {
  const h = D.header;
  return el("header", {}, el("h1", {}, h.title, "  ", el("span", {class: "badge " + (h.passed ? (h.warn ? "warn" : "pass") : "fail"), id: "verdict"}, h.verdict)),
    el("div", {class: "dim"}, h.line),
    el("div", {class: "counts"}, h.counts.map(([t, c]) => el("span", {class: c || null}, t))),
    el("div", {class: "counts dim"}, h.kinds),
    (h.notes || []).map(t => el("div", {class: "verdict-note"}, t)),
    el("details", {class: "legend", id: "status-legend"}, el("summary", {}, "what the marks mean"),
      el("div", {class: "marks"}, D.status_legend.map(([m, what]) => el("span", {}, el("b", {}, m), " " + what)))));
}
function gatesSection(gates, title) {
  const t = el("table", {id: "gates"}, el("tr", {}, el("th", {}, "gate"), el("th", {}, "result"), el("th", {}, "failures")));
  for (const g of gates) t.append(el("tr", {},
    el("td", {}, el("code", {}, g.name), g.description ? el("div", {class: "dim"}, g.description) : null),
    el("td", {class: g.passed ? "st-ok" : "st-failed"}, g.result),
    el("td", {}, g.failures.map(([p, text]) => el("div", {}, p ? el("code", {}, p) : null, p ? ": " : "", text)),
      g.more ? el("div", {class: "dim"}, g.more) : null)));
  return [el("h2", {}, title), t];
}
function matrixSection() {
  const M = D.matrix; if (!M) return [];
  const t = el("table", {class: "mx", id: "matrix"});
  t.append(el("colgroup", {}, el("col", {class: "kernel"}), M.columns.map(() => el("col", {}))));
  t.append(el("tr", {}, el("th", {}, "kernel"), M.columns.map(([a, b]) => el("th", {}, a, el("br"), el("span", {class: "dim"}, b)))));
  for (const [kernel, cells] of M.rows) t.append(el("tr", {}, el("th", {}, kernel), cells.map(c => c === null
    ? el("td", {class: "cell dim"}, "·")
    : el("td", {class: "cell " + c[1], "data-cell": c[4], title: c[2], onclick: () => open(MAIN, c[3])}, c[0]))));
  const legend = el("div", {class: "marks", id: "matrix-legend"}, M.legend.map(([m, what]) => el("span", {}, el("b", {}, m), " " + what)));
  return [el("h2", {}, "Lowering matrix"), el("p", {class: "dim"}, "Click a cell for its full diagnostic."),
    el("div", {class: "hscroll"}, t), legend];
}
function probesSection() {
  const cols = [["probe", 0], ["family", 1], ["status", 2], ["seconds", 5, true], ["signals", 6, true], ["reason", 7]];
  const status = el("select", {id: "probe-status"}, el("option", {value: ""}, "every status"),
    [...new Set(D.probes.map(p => p[2]))].map(s => el("option", {value: s}, s)));
  const text = el("input", {id: "probe-text", type: "search", placeholder: "filter probes by text", size: 28});
  let sortCol = null, rev = false;
  const body = el("tbody");
  const hdr = el("tr", {}, cols.map(([name, , isNum], ci) => el("th", {class: isNum ? "num" : null,
    onclick: () => { rev = sortCol === ci ? !rev : false; sortCol = ci; draw(); }}, name)));
  const table = el("table", {id: "probes", class: "fixed"}, el("colgroup", {}, ["c-probe", "c-family", "c-status", "c-num", "c-num", ""].map(c => el("col", {class: c || null}))),
    el("thead", {}, hdr), body);
  function draw() {
    const q = text.value.toLowerCase(), sv = status.value;
    // the summary's order: the worst state first (findings, not examined...), ok last
    const list = (D.probe_order || D.probes.map((p, pi) => pi)).filter(pi => { const p = D.probes[pi];
      return (!sv || p[2] === sv) && (!q || (p[0] + " " + p[7]).toLowerCase().includes(q)); });
    if (sortCol !== null) { const f = cols[sortCol][1];
      list.sort((a, b) => cmp(low(D.probes[a][f]), low(D.probes[b][f])) * (rev ? -1 : 1)); }
    body.replaceChildren(...list.map(pi => { const p = D.probes[pi];
      return el("tr", {class: "clickable", "data-probe": p[0], onclick: () => openProbe(pi)},
        el("td", {}, el("code", {}, p[0])), el("td", {}, p[1]), el("td", {class: p[3]}, p[2]),
        el("td", {class: "num"}, p[4]), el("td", {class: "num"}, p[6]), el("td", {}, el("div", {class: "clip"}, p[7]))); }));
  }
  status.addEventListener("change", draw); text.addEventListener("input", draw);
  draw();
  return [el("h2", {}, "Probes"), el("div", {class: "controls"}, status, text), el("div", {class: "scroll"}, table)];
}
// the signal table, a column at a time: cells[c][row] is a string id, sort[s][row] a value
function signalTable(ctx, rows) {
  const cols = ctx.table.columns.map((c, i) => [c, i]).filter(([c]) => c.used);
  const body = el("tbody");
  const t = el("table", {class: "signals fixed"}, el("colgroup", {}, cols.map(([c]) => el("col", {style: "width:" + c.width + "%"}))),
    el("thead", {}, el("tr", {}, cols.map(([c]) => el("th", {class: c.numeric ? "num" : null}, c.label)))), body);
  for (const i of rows) {
    const css = S[ctx.table.css[i]];
    const tr = el("tr", {class: "clickable" + (ctx.table.failing[i] ? " failing" : "") + (css ? " " + css : ""), "data-key": i, onclick: () => openSignal(ctx, i)});
    for (const [c, ci] of cols) {
      const v = ctx.cell(i, ci);
      const shown = c.key === "site" || c.key === "probe" ? el("code", {}, v) : v;
      tr.append(el("td", {class: c.numeric ? "num" : c.wide ? null : "nowrap", "data-col": c.key}, c.wide ? el("div", {class: "clip"}, shown) : shown));
    }
    body.append(tr);
  }
  return t;
}
function filteredSignals(ctx, id) {
  const PAGE = 500, T = ctx.table;
  const kind = el("select", {id: id + "-kind"}, el("option", {value: ""}, "every kind"), T.kinds.map(k => el("option", {value: k}, k)));
  const text = el("input", {id: id + "-text", type: "search", placeholder: "filter by text in any column", size: 30});
  const onlyFail = el("input", {type: "checkbox", id: id + "-failing"});
  const sort = el("select", {id: id + "-sort"}, el("option", {value: ""}, "most important first"),
    el("option", {value: "@report"}, "report order"),
    T.columns.map((c, ci) => el("option", {value: c.key, "data-at": ci}, "sort by " + c.label)));
  const rev = el("input", {type: "checkbox", id: id + "-reverse"});
  const count = el("span", {class: "dim", id: id + "-count"});
  const holder = el("div", {class: "scroll"});
  let limit = PAGE;
  const more = el("button", {onclick: () => { limit += PAGE * 4; draw(); }}, "show more");
  const natural = Array.from({length: ctx.n}, (_, i) => i);
  const ranked = T.order || natural;  // findings first, the environment last (report.severity)
  let hay = null;  // what the text filter searches, each row's once (on the first query)
  const haystack = i => (hay || (hay = natural.map(j => (ctx.probes[ctx.probeOf[j]] + "\u0000" +
    T.cells.map(c => S[c[j]]).join("\u0000")).toLowerCase())))[i];
  function draw() {
    const q = text.value.toLowerCase(), k = kind.value, f = onlyFail.checked;
    const kid = k ? S.indexOf(k) : -1, kinds = T.cells[KIND];
    const all = sort.value === "@report" ? natural : ranked;
    let list = !k && !f && !q ? all : all.filter(i => {
      if (k && kinds[i] !== kid) return false; if (f && !T.failing[i]) return false;
      return !q || haystack(i).includes(q); });
    if (sort.value !== "" && sort.value !== "@report") { const ci = T.columns.findIndex(c => c.key === sort.value), c = T.columns[ci];
      const keyOf = c.sort === null ? i => low(ctx.cell(i, ci)) : i => low(T.sort[c.sort][i]), s = rev.checked ? -1 : 1;
      const key = new Array(ctx.n);
      for (const i of list) key[i] = keyOf(i);
      list = list.slice().sort((a, b) => cmp(key[a], key[b]) * s); }
    count.textContent = list.length.toLocaleString("en") + " of " + ctx.n.toLocaleString("en") + " signals" + (list.length > limit ? " (first " + limit + " shown)" : "");
    holder.replaceChildren(signalTable(ctx, list.slice(0, limit)));
    more.hidden = list.length <= limit;
  }
  for (const c of [kind, sort, onlyFail, rev]) c.addEventListener("change", () => { limit = PAGE; draw(); });
  text.addEventListener("input", () => { limit = PAGE; draw(); });
  draw();
  return el("div", {id: id}, el("div", {class: "controls"}, kind, text, el("label", {}, onlyFail, " only failing"), sort,
    el("label", {}, rev, " reverse"), count), holder, more);
}
function context(table, probes, logs) {
  const n = table.failing.length, probeOf = new Int32Array(n);
  let at = 0;
  table.probe_rows.forEach((count, pi) => { probeOf.fill(pi, at, at + count); at += count; });
  return {table, probes, logs, n, probeOf, cell: (i, ci) => S[table.cells[ci][i]]};
}
const MAIN = context(D.signals, D.probes.map(p => p[0]), D.logs);
function diffSection() {
  const X = D.diff, ctx = context(X.signals, X.probes, X.logs);
  return [el("h2", {}, "Changes"), el("p", {id: "diff-counts"}, el("span", {class: "reg"}, X.counts[0]), ", ",
    el("span", {class: "imp"}, X.counts[1]), ", ", el("span", {class: "note"}, X.counts[2]), X.counts[3]),
    X.versions ? el("p", {class: "dim"}, "versions: " + X.versions) : null, filteredSignals(ctx, "changes")];
}
function toleranceSection() {
  if (!D.tolerance.length) return [];
  const t = el("table", {id: "tolerance", class: "fixed"}, el("colgroup", {}, ["c-probe", "", "c-num", "c-num", "c-num", "c-num", "c-num"].map(c => el("col", {class: c || null}))), el("tr", {}, ["probe", "check", "value", "limit", "passed", "argmax", "top-2 gap"].map(h => el("th", {}, h))));
  for (const r of D.tolerance) t.append(el("tr", {class: "clickable" + (r[1] ? " failing" : ""), onclick: () => openSignal(MAIN, r[0])},
    el("td", {}, el("code", {}, r[2])), el("td", {}, r[3]), el("td", {class: "num"}, r[4]), el("td", {class: "num"}, r[5]),
    el("td", {}, r[6]), el("td", {}, r[7]), el("td", {class: "num"}, r[8])));
  return [el("h2", {}, "Tolerance"), el("div", {class: "scroll"}, t)];
}
function environmentSection() {
  const parts = [el("h2", {}, "Environment")];
  for (const [title, rows] of D.environment) parts.push(el("h4", {}, title), facts(rows));
  if (D.errors.length) parts.push(el("h4", {class: "failing"}, "probe file errors"), facts(D.errors));
  return parts;
}
app.replaceChildren(...[header(), D.diff ? diffSection() : null,
  gatesSection(D.diff ? D.diff.gates : D.gates, D.diff ? "Gates of the diff" : "Gates"),
  D.diff ? gatesSection(D.gates, "Gates of the new report") : null, matrixSection(), detail,
  probesSection(), el("h2", {}, "Signals"), filteredSignals(MAIN, "signals"), toleranceSection(), environmentSection()]
  .flat(4).filter(x => x !== null && x !== undefined));
document.title = D.header.title;
