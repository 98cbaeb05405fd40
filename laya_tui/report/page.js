// laya-tui --html: renders the report embedded in the page (inlined by html_report.py).
"use strict";
const D = JSON.parse(document.getElementById("laya-data").textContent);
const app = document.getElementById("app");
const KINDS = ["environment","fallback","recompile","compile","host_bounce","cast","tolerance",
  "lowering","timing","artifact","log"];
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v); else e.setAttribute(k, v);
  }
  for (const k of kids.flat()) if (k !== null && k !== undefined)
    e.append(k instanceof Node ? k : String(k));
  return e;
}
function num(v) {
  if (v === null || v === undefined || v === "") return "";
  if (typeof v !== "number") return String(v);
  if (Number.isInteger(v)) return v.toLocaleString("en");
  const a = Math.abs(v); return (a !== 0 && (a < 1e-3 || a >= 1e6)) ? v.toExponential(3) : String(Number(v.toPrecision(4)));
}
function bytes(n) {
  if (typeof n !== "number") return "";
  let v = n; for (const u of ["B","KiB","MiB","GiB"]) { if (v < 1024 || u === "GiB")
    return u === "B" ? v + " B" : v.toFixed(1) + " " + u; v /= 1024; }
}
function site(s) { if (!s || !s.file) return ""; return s.file + (s.line != null ? ":" + s.line : "") +
  (s.func ? "(" + s.func + ")" : ""); }
function kv(pairs) { const dl = el("dl", {class: "kv"});
  for (const [k, v] of pairs) if (v !== undefined && v !== null && v !== "")
    dl.append(el("dt", {}, k), el("dd", {}, v)); return dl; }
function excerpt(s) {
  if (!s || !s.file) return null;
  const key = s.file + ":" + s.line, ex = D.excerpts[key];
  if (ex === undefined) return null;
  if (ex === null) return el("p", {class: "dim"}, "(source not readable where this page was written: " + s.file + ")");
  const pre = el("pre", {class: "excerpt"});
  ex.text.replace(/\n$/, "").split("\n").forEach((line, i) => {
    const n = ex.start + i, row = String(n).padStart(5) + "  " + line + "\n";
    pre.append(n === ex.line ? el("span", {class: "hl"}, row) : row);
  });
  return pre;
}
function multi(t) { return t && String(t).includes("\n") ? el("pre", {}, String(t)) : t; }
function failing(s) { const d = s.detail || {};
  return s.passed === false || ["lower-failed","build-failed","run-failed"].includes(d.outcome); }

// -- detail ------------------------------------------------------------------------------
const detail = el("section", {id: "detail", hidden: true});
function showDetail(title, ...parts) {
  detail.replaceChildren(el("h3", {style: "margin:4px 0"}, title),
    ...parts.flat(4).filter(x => x !== null && x !== undefined));
  detail.hidden = false;
  detail.scrollIntoView({block: "nearest"});
}
function signalDetail(pi, si, probes) {
  const p = probes[pi], s = p.signals[si], d = (s.detail && typeof s.detail === "object") ? s.detail : {};
  const parts = [];
  const cell = ["kernel","target","dtype","spec"].map(k => d[k]).filter(Boolean).join(", ");
  parts.push(kv([["probe", p.id + "  (" + p.status + ")"], ["kind", s.kind], ["subject", s.subject],
    ["reason", multi(s.reason)], ["diagnostic", d.diagnostic && d.diagnostic !== s.reason ? multi(d.diagnostic) : null],
    ["outcome", d.outcome ? d.outcome + (cell ? "  (" + cell + ")" : "") : null],
    ["stage", d.stage], ["pass", d.pass], ["exception", d.exception],
    ["count", s.count], ["bytes", s.bytes != null ? bytes(s.bytes) + "  (" + s.bytes.toLocaleString("en") + " B)" : null],
    ["seconds", s.seconds], ["value", s.value != null ? num(s.value) : null],
    ["limit", s.limit != null ? num(s.limit) : null],
    ["passed", s.passed === true ? "yes" : s.passed === false ? "no" : null],
    ["stages", d.seconds && typeof d.seconds === "object" ? Object.entries(d.seconds).map(([k, v]) => k + " " + num(v) + " s").join(", ") : null],
    ["fix", s.fix], ["change", d.change ? d.change + " (" + d["class"] + ")" : null],
    ["before", d.before ? JSON.stringify(d.before) : null], ["after", d.after ? JSON.stringify(d.after) : null]]));
  if (s.site && s.site.file) parts.push(el("h4", {}, "call site  ", el("code", {}, site(s.site))), excerpt(s.site));
  if (d.kernel_site && d.kernel_site.file && site(d.kernel_site) !== site(s.site))
    parts.push(el("h4", {}, "kernel site  ", el("code", {}, site(d.kernel_site))), excerpt(d.kernel_site));
  if (d.source_excerpt && (d.generated_source || !String(d.diagnostic || "").includes(String(d.source_excerpt).trim())))
    parts.push(el("h4", {}, d.generated_source ? "generated source  " : "excerpt  ",
    el("code", {}, d.generated_source || "")), el("pre", {}, String(d.source_excerpt)));
  if (d.command) parts.push(el("h4", {}, "command"), el("pre", {}, String(d.command)));
  if (Array.isArray(d.stack) && d.stack.length) parts.push(el("h4", {}, "stack"), el("pre", {}, d.stack.join("\n")));
  const shown = new Set(["diagnostic","source_excerpt","generated_source","kernel","target","dtype","spec",
    "outcome","stage","pass","exception","seconds","kernel_site","stack","command","change","class","before","after"]);
  const rest = Object.entries(d).filter(([k]) => !shown.has(k));
  if (rest.length) parts.push(el("h4", {}, "more detail"), el("pre", {}, JSON.stringify(Object.fromEntries(rest), null, 1)));
  if (p.log_tail && p.log_tail.trim()) parts.push(el("h4", {}, "log tail of " + p.id), el("pre", {}, p.log_tail));
  showDetail((failing(s) ? "✗ " : "") + s.kind + "  " + (s.subject || ""), parts);
  detail.dataset.subject = "signal:" + p.id + ":" + si;
}
function probeDetail(pi, probes) {
  const p = probes[pi], err = (p.error && typeof p.error === "object") ? p.error : {};
  const parts = [kv([["status", p.status], ["reason", p.reason], ["seconds", p.seconds != null ? num(p.seconds) + (p.cached ? "  (cached)" : "") : null],
    ["file", p.file], ["deps", (p.deps || []).join(", ")], ["signals", (p.signals || []).length]])];
  if (err.site) parts.push(el("h4", {}, "raised at  ", el("code", {}, site(err.site))), excerpt(err.site));
  if (err.traceback) parts.push(el("h4", {}, "traceback"), el("pre", {}, err.traceback));
  parts.push(el("h4", {}, p.status === "crashed" ? "stderr tail" : "log tail"),
    p.log_tail && p.log_tail.trim() ? el("pre", {}, p.log_tail) : el("p", {class: "dim"}, "(the probe wrote nothing)"));
  const sigs = p.signals || [];
  if (sigs.length) parts.push(el("h4", {}, "signals"), signalTable(sigs.map((s, si) => [pi, si]), probes, false));
  showDetail(p.id, parts);
  detail.dataset.subject = "probe:" + p.id;
}

// -- sections ----------------------------------------------------------------------------
function header() {
  const s = D.summary || {}, st = s.status || {};
  const pass = s.passed;
  const env = D.environment || {}, host = env.host || {}, v = env.versions || {};
  const counts = el("div", {class: "counts"}, el("span", {}, (s.probes ?? D.probes.length) + " probes"),
    Object.entries(st).filter(([, n]) => n).map(([k, n]) => el("span", {class: "st-" + k}, k + " " + n)),
    s.seconds != null ? el("span", {class: "dim"}, num(s.seconds) + " s") : null);
  const kinds = el("div", {class: "counts dim"}, "signals: ",
    Object.entries(s.signals || {}).filter(([, n]) => n).map(([k, n]) => el("span", {}, k + " " + n.toLocaleString("en"))));
  return el("header", {}, el("h1", {}, D.title, "  ", el("span", {class: "badge " + (pass ? "pass" : "fail"), id: "verdict"}, pass ? "PASS" : "FAIL")),
    el("div", {class: "dim"}, [D.created ? "written " + D.created : "", host.hostname ? "on " + host.hostname : "",
      host.machine, v.python ? "python " + v.python : "", v.torch ? "torch " + v.torch : "",
      D.tool ? (D.tool.name + " " + D.tool.version) : "", D.schema].filter(Boolean).join(" · ")),
    counts, kinds, (D.notes || []).map(t => el("div", {class: "verdict-note"}, t)));
}
function gatesSection(gates, title) {
  const t = el("table", {id: "gates"}, el("tr", {}, el("th", {}, "gate"), el("th", {}, "result"), el("th", {}, "failures")));
  for (const g of gates) {
    const list = g.failures.map(f => el("div", {}, f.probe ? el("code", {}, f.probe) : null, f.probe ? ": " : "", f.text));
    if (g.more) list.push(el("div", {class: "dim"}, "… and " + g.more + " more"));
    t.append(el("tr", {}, el("td", {}, el("code", {}, g.name), g.description ? el("div", {class: "dim"}, g.description) : null),
      el("td", {class: g.passed ? "st-ok" : "st-failed"}, g.passed ? "pass" : "FAIL (" + (g.failures.length + g.more) + ")"),
      el("td", {}, list)));
  }
  return [el("h2", {}, title || "Gates"), t];
}
function diffSection() {
  const sec = D.diff.section || {}, probes = D.diff.probes;
  const rows = [];
  probes.forEach((p, pi) => (p.signals || []).forEach((s, si) => rows.push([pi, si])));
  const pr = sec.probes || {};
  const env = Object.entries(sec.environment || {}).map(([k, v]) => k + " " + v.before + " → " + v.after).join(", ");
  return [el("h2", {}, "Changes"), el("p", {id: "diff-counts"}, el("span", {class: "reg"}, (sec.regressions || []).length + " regression(s)"), ", ",
    el("span", {class: "imp"}, (sec.improvements || []).length + " improvement(s)"), ", ",
    el("span", {class: "note"}, (sec.notes || []).length + " note(s)"),
    "; " + (pr.compared ?? "?") + " probe(s) compared (" + (pr.before ?? "?") + " before, " + (pr.after ?? "?") + " after)"),
    env ? el("p", {class: "dim"}, "versions: " + env) : null,
    filteredSignals(rows, probes, "changes")];
}
function matrixSection() {
  const M = D.matrix; if (!M) return [];
  const t = el("table", {class: "mx", id: "matrix"});
  const head = el("tr", {}, el("th", {}, "kernel"));
  for (const c of M.columns) head.append(el("th", {}, c.filter(Boolean).join(" · ")));
  t.append(head);
  const label = {"ran": "✓ ran", "built": "◐ built", "lowered": "◔ lowered", "lower-failed": "✗ lower",
    "build-failed": "✗ build", "run-failed": "✗ run", "skipped": "⊘ skip", "crashed": "✹ crash",
    "timeout": "◷ timeout", "failed": "✗ probe", "error": "⚠ error", "ok": "✓ ok"};
  for (const k of M.kernels) {
    const tr = el("tr", {}, el("th", {}, k));
    for (const c of M.columns) {
      const key = [k, ...c].join("|"), cell = M.cells[key];
      if (!cell) { tr.append(el("td", {class: "cell dim"}, "·")); continue; }
      tr.append(el("td", {class: "cell o-" + cell.outcome, "data-cell": key, title: D.probes[cell.probe].id,
        onclick: () => cell.signal === null ? probeDetail(cell.probe, D.probes) : signalDetail(cell.probe, cell.signal, D.probes)},
        label[cell.outcome] || cell.outcome));
    }
    t.append(tr);
  }
  return [el("h2", {}, "Lowering matrix"), el("p", {class: "dim"}, "Click a cell for its full diagnostic."), el("div", {class: "scroll"}, t)];
}
function probesSection() {
  const rows = D.probes.map((p, pi) => pi);
  const cols = [["probe", p => p.id], ["family", p => p.family], ["status", p => p.status],
    ["seconds", p => p.seconds ?? 0, true], ["signals", p => (p.signals || []).length, true], ["reason", p => p.reason || ""]];
  const status = el("select", {id: "probe-status"}, el("option", {value: ""}, "every status"),
    [...new Set(D.probes.map(p => p.status))].map(s => el("option", {value: s}, s)));
  const text = el("input", {id: "probe-text", type: "search", placeholder: "filter probes by text"});
  let sortCol = null, rev = false;
  const body = el("tbody");
  const table = el("table", {id: "probes"});
  const hdr = el("tr");
  cols.forEach(([name, , isNum], ci) => hdr.append(el("th", {class: isNum ? "num" : null,
    onclick: () => { rev = sortCol === ci ? !rev : false; sortCol = ci; draw(); }}, name)));
  table.append(el("thead", {}, hdr), body);
  function draw() {
    const q = text.value.toLowerCase(), sv = status.value;
    let list = rows.filter(pi => { const p = D.probes[pi];
      return (!sv || p.status === sv) && (!q || (p.id + " " + (p.reason || "")).toLowerCase().includes(q)); });
    if (sortCol !== null) { const f = cols[sortCol][1];
      list.sort((a, b) => { const x = f(D.probes[a]), y = f(D.probes[b]); return (x < y ? -1 : x > y ? 1 : 0) * (rev ? -1 : 1); }); }
    body.replaceChildren(...list.map(pi => { const p = D.probes[pi];
      return el("tr", {class: "clickable", "data-probe": p.id, onclick: () => probeDetail(pi, D.probes)},
        el("td", {}, el("code", {}, p.id)), el("td", {}, p.family), el("td", {class: "st-" + p.status}, p.status),
        el("td", {class: "num"}, p.seconds != null ? num(p.seconds) + (p.cached ? " (cached)" : "") : ""),
        el("td", {class: "num"}, (p.signals || []).length), el("td", {}, (p.reason || "").slice(0, 240))); }));
  }
  status.addEventListener("change", draw); text.addEventListener("input", draw);
  draw();
  return [el("h2", {}, "Probes"), el("div", {class: "controls"}, status, text), el("div", {class: "scroll"}, table)];
}
const SIG_COLS = [["probe", (p, s) => p.id], ["kind", (p, s) => s.kind], ["subject", (p, s) => s.subject || ""],
  ["count", (p, s) => s.count ?? -1, true], ["bytes", (p, s) => s.bytes ?? -1, true],
  ["value", (p, s) => typeof s.value === "number" ? s.value : (s.seconds ?? -Infinity), true],
  ["limit", (p, s) => s.limit ?? -Infinity, true], ["reason", (p, s) => s.reason || ""], ["site", (p, s) => site(s.site)]];
function signalTable(rows, probes, withProbe) {
  const cols = withProbe ? SIG_COLS : SIG_COLS.slice(1);
  const t = el("table", {class: "signals"}, el("tr", {}, cols.map(([n, , isNum]) => el("th", {class: isNum ? "num" : null}, n))));
  for (const [pi, si] of rows) {
    const p = probes[pi], s = p.signals[si];
    const cls = {regression: " reg", improvement: " imp", note: " note"}[(s.detail || {})["class"]] || "";
    const tr = el("tr", {class: "clickable" + (failing(s) ? " failing" : "") + cls, onclick: () => signalDetail(pi, si, probes)});
    for (const [n, f, isNum] of cols) {
      let v = f(p, s);
      if (n === "bytes") v = s.bytes != null ? bytes(s.bytes) : "";
      else if (n === "value") v = s.value != null ? num(s.value) : s.seconds != null ? num(s.seconds) + " s" : "";
      else if (isNum) v = (v === -1 || v === -Infinity) ? "" : num(v);
      tr.append(el("td", {class: isNum ? "num" : null}, n === "probe" || n === "site" ? el("code", {}, v) : String(v).slice(0, 300)));
    }
    t.append(tr);
  }
  return t;
}
function filteredSignals(rows, probes, id) {
  const PAGE = 500;
  const present = new Set(rows.map(([pi, si]) => probes[pi].signals[si].kind));
  const kind = el("select", {id: id + "-kind"}, el("option", {value: ""}, "every kind"),
    KINDS.filter(k => present.has(k)).map(k => el("option", {value: k}, k)));
  const text = el("input", {id: id + "-text", type: "search", placeholder: "filter by text in any column"});
  const onlyFail = el("input", {type: "checkbox", id: id + "-failing"});
  const sort = el("select", {id: id + "-sort"}, el("option", {value: ""}, "report order"),
    SIG_COLS.map(([n], ci) => el("option", {value: String(ci)}, "sort by " + n)));
  const rev = el("input", {type: "checkbox", id: id + "-reverse"});
  const count = el("span", {class: "dim", id: id + "-count"});
  const holder = el("div", {class: "scroll"});
  let limit = PAGE;
  const more = el("button", {onclick: () => { limit += PAGE * 4; draw(); }}, "show more");
  function draw() {
    const q = text.value.toLowerCase(), k = kind.value, f = onlyFail.checked;
    let list = rows.filter(([pi, si]) => { const p = probes[pi], s = p.signals[si];
      if (k && s.kind !== k) return false; if (f && !failing(s)) return false;
      if (!q) return true;
      return (p.id + " " + s.kind + " " + (s.subject || "") + " " + (s.reason || "") + " " + site(s.site) + " " + (s.fix || "")).toLowerCase().includes(q); });
    if (sort.value !== "") { const g = SIG_COLS[+sort.value][1], r = rev.checked ? -1 : 1;
      list = list.slice().sort((a, b) => { const x = g(probes[a[0]], probes[a[0]].signals[a[1]]), y = g(probes[b[0]], probes[b[0]].signals[b[1]]);
        return (x < y ? -1 : x > y ? 1 : 0) * r; }); }
    count.textContent = list.length.toLocaleString("en") + " of " + rows.length.toLocaleString("en") + " signals" + (list.length > limit ? " (first " + limit + " shown)" : "");
    holder.replaceChildren(signalTable(list.slice(0, limit), probes, true));
    more.hidden = list.length <= limit;
  }
  for (const c of [kind, sort]) c.addEventListener("change", () => { limit = PAGE; draw(); });
  for (const c of [onlyFail, rev]) c.addEventListener("change", () => { limit = PAGE; draw(); });
  text.addEventListener("input", () => { limit = PAGE; draw(); });
  draw();
  return el("div", {id: id}, el("div", {class: "controls"}, kind, text, el("label", {}, onlyFail, " only failing"), sort,
    el("label", {}, rev, " reverse"), count), holder, more);
}
function signalsSection() {
  const rows = [];
  D.probes.forEach((p, pi) => (p.signals || []).forEach((s, si) => rows.push([pi, si])));
  return [el("h2", {}, "Signals"), filteredSignals(rows, D.probes, "signals")];
}
function toleranceSection() {
  const rows = [];
  D.probes.forEach((p, pi) => (p.signals || []).forEach((s, si) => { if (s.kind === "tolerance") rows.push([pi, si]); }));
  if (!rows.length) return [];
  const t = el("table", {id: "tolerance"}, el("tr", {}, ["probe", "check", "value", "limit", "passed", "argmax", "top-2 gap"].map(h => el("th", {}, h))));
  for (const [pi, si] of rows) {
    const p = D.probes[pi], s = p.signals[si], d = s.detail || {};
    t.append(el("tr", {class: "clickable" + (s.passed === false ? " failing" : ""), onclick: () => signalDetail(pi, si, D.probes)},
      el("td", {}, el("code", {}, p.id)), el("td", {}, s.subject || ""), el("td", {class: "num"}, num(s.value)),
      el("td", {class: "num"}, num(s.limit)), el("td", {}, s.passed === true ? "yes" : s.passed === false ? "NO" : ""),
      el("td", {}, d.argmax_match != null ? d.argmax_match + (d.rows != null ? " / " + d.rows : "") : ""),
      el("td", {class: "num"}, num(d.top2_gap_min))));
  }
  return [el("h2", {}, "Tolerance"), el("div", {class: "scroll"}, t)];
}
function environmentSection() {
  const env = D.environment || {};
  const parts = [el("h2", {}, "Environment")];
  for (const [key, title] of [["host", "machine"], ["versions", "library versions"], ["probed", "probed environment"]]) {
    const sec = env[key]; if (!sec || typeof sec !== "object") continue;
    parts.push(el("h4", {}, title), kv(Object.entries(sec).map(([k, v]) => [k, v === null ? "—" : typeof v === "object" ? JSON.stringify(v) : String(v)])));
  }
  if (D.errors.length) parts.push(el("h4", {class: "failing"}, "probe file errors"),
    kv(D.errors.map(e => [e.file + (e.line ? ":" + e.line : ""), e.error])));
  return parts;
}
app.replaceChildren(...[header(), D.diff ? diffSection() : null,
  gatesSection(D.diff ? D.diff.gates : D.gates, D.diff ? "Gates of the diff" : "Gates"),
  D.diff ? gatesSection(D.gates, "Gates of the new report") : null, matrixSection(), detail,
  probesSection(), signalsSection(), toleranceSection(), environmentSection()]
  .flat(4).filter(x => x !== null && x !== undefined));
document.title = D.title;
