// agentloop dashboard: building nodes (never from HTML), formatting, charts, the
// plan diff and the Markdown of progress.md.
"use strict";

// ---------------------------------------------------------------- DOM helpers

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v;
    // Through CSSOM: the page's CSP allows no inline style attributes.
    else if (k === "style") node.style.cssText = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(node.dataset, v);
    else node.setAttribute(k, v === true ? "" : v);
  }
  append(node, children);
  return node;
}

// Replaces a node's children; null and false children are left out.
function fill(node, ...children) {
  node.replaceChildren();
  return append(node, children);
}

function append(node, children) {
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

const SVG_NS = "http://www.w3.org/2000/svg";
function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  for (const c of children.flat()) {
    if (c === undefined || c === null) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

function toast(message, kind = "info") {
  const t = document.getElementById("toast");
  t.textContent = message;
  t.className = "show " + kind;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => (t.className = ""), 4000);
}

// The same rule as the CLI (agentloop_core::words::money): two decimals from $1 up,
// below it up to four, so small amounts add up to what the totals say.
function money(x) {
  const v = Number(x || 0);
  if (Math.abs(v) >= 1) return "$" + v.toFixed(2);
  const four = v.toFixed(4).replace(/0+$/, "");
  const decimals = (four.split(".")[1] || "").length;
  return "$" + (decimals < 2 ? v.toFixed(2) : four);
}

function duration(ms) {
  if (ms === null || ms === undefined) return "–";
  const s = Math.round(ms / 1000);
  if (s < 60) return (ms < 10000 ? (ms / 1000).toFixed(1) : s) + "s";
  const m = Math.floor(s / 60);
  if (m < 60) return m + "m " + String(s % 60).padStart(2, "0") + "s";
  return Math.floor(m / 60) + "h " + String(m % 60).padStart(2, "0") + "m";
}

function compact(n) {
  const v = Number(n || 0);
  if (v >= 1e6) return (v / 1e6).toFixed(1) + "M";
  if (v >= 1e3) return (v / 1e3).toFixed(1) + "k";
  return String(v);
}

const FINISHED = new Set(["completed", "stopped", "failed", "gone", "unreadable"]);
// Statuses whose clock stands still: over, or with no driver to move it.
const STILL = new Set([...FINISHED, "interrupted"]);

function elapsedMs(run) {
  const start = Date.parse(run.created);
  if (isNaN(start)) return null;
  const end = STILL.has(run.status) ? Date.parse(run.updated) : Date.now();
  return Math.max(0, end - start);
}

function statusPill(status) {
  return el("span", { class: "pill s-" + status }, status);
}

function progressBar(done, total, label) {
  const pct = total ? Math.round((100 * done) / total) : 0;
  return el(
    "div",
    {
      class: "bar",
      role: "progressbar",
      "aria-valuemin": "0",
      "aria-valuemax": String(total),
      "aria-valuenow": String(done),
      "aria-label": label,
    },
    el("div", { class: "fill", style: "width:" + pct + "%" }),
  );
}

function progress(done, total, label) {
  return el("div", { class: "progress" }, progressBar(done, total, label), el("span", { class: "progress-text" }, done + " / " + total));
}

// ---------------------------------------------------------------- charts

function barChart(title, rows, fmt) {
  const W = 320, H = 180, pad = 28;
  const max = Math.max(0, ...rows.map((r) => r[1]));
  const bw = rows.length ? (W - pad) / rows.length : 0;
  const chart = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": title + ": " + rows.map((r) => r[0] + " " + fmt(r[1])).join(", ") },
    svg("line", { x1: pad, y1: H - 20, x2: W, y2: H - 20, class: "axis" }),
    ...rows.map(([label, v], i) => {
      const h = max > 0 ? ((H - 40) * v) / max : 0;
      const x = pad + i * bw + bw * 0.15;
      return svg("g", {},
        svg("rect", { x, y: H - 20 - h, width: Math.max(1, bw * 0.7), height: h, class: "bar-rect" },
          svg("title", {}, label + ": " + fmt(v))),
        svg("text", { x: x + bw * 0.35, y: H - 6, "text-anchor": "middle", class: "tick" }, label),
        h > 0 ? svg("text", { x: x + bw * 0.35, y: H - 24 - h, "text-anchor": "middle", class: "value" }, fmt(v)) : null,
      );
    }),
  );
  return el("figure", { class: "chart" }, el("figcaption", {}, title), chart);
}

function lineChart(title, points, fmt) {
  const W = 320, H = 180, pad = 28;
  const fig = el("figure", { class: "chart" }, el("figcaption", {}, title));
  if (points.length === 0) {
    fig.append(el("p", { class: "muted" }, "No finished iterations yet."));
    return fig;
  }
  const t0 = points[0][0], t1 = points[points.length - 1][0];
  const max = Math.max(...points.map((p) => p[1]), 1e-9);
  const x = (t) => pad + (t1 > t0 ? ((W - pad - 8) * (t - t0)) / (t1 - t0) : (W - pad) / 2);
  const y = (v) => H - 20 - ((H - 40) * v) / max;
  const d = points.map((p, i) => (i ? "L" : "M") + x(p[0]).toFixed(1) + " " + y(p[1]).toFixed(1)).join(" ");
  fig.append(svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": title + ": " + fmt(points[points.length - 1][1]) + " after " + points.length + " iterations" },
    svg("line", { x1: pad, y1: H - 20, x2: W, y2: H - 20, class: "axis" }),
    svg("path", { d, class: "line" }),
    ...points.map((p, i) => svg("circle", { cx: x(p[0]), cy: y(p[1]), r: 3, class: "dot" }, svg("title", {}, "after iteration " + (i + 1) + ": " + fmt(p[1])))),
    svg("text", { x: pad, y: 12, class: "value" }, fmt(points[points.length - 1][1])),
    svg("text", { x: W, y: H - 6, "text-anchor": "end", class: "tick" }, duration(t1 - t0)),
  ));
  return fig;
}

// ---------------------------------------------------------------- plan diff

// Line diff by longest common subsequence (plans are small).
function diffLines(a, b) {
  const x = a.split("\n"), y = b.split("\n");
  const n = x.length, m = y.length;
  const L = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--)
      L[i][j] = x[i] === y[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
  const out = [];
  let i = 0, j = 0;
  while (i < n && j < m) {
    if (x[i] === y[j]) out.push([" ", x[i++]]), j++;
    else if (L[i + 1][j] >= L[i][j + 1]) out.push(["-", x[i++]]);
    else out.push(["+", y[j++]]);
  }
  while (i < n) out.push(["-", x[i++]]);
  while (j < m) out.push(["+", y[j++]]);
  return out;
}

function diffView(a, b) {
  const lines = diffLines(a, b);
  return el("pre", { class: "log diff", tabindex: "0" },
    ...lines.map(([op, text]) => el("span", { class: op === "+" ? "add" : op === "-" ? "del" : "same" }, op + " " + text + "\n")));
}

// ---------------------------------------------------------------- markdown

// Enough Markdown for progress.md: headings, lists, code blocks, paragraphs, inline
// code and emphasis. Builds nodes; never parses HTML.
function markdown(text) {
  const out = [];
  const lines = text.split("\n");
  let list = null;
  let para = [];
  const flush = () => {
    if (para.length) out.push(el("p", {}, ...inline(para.join(" "))));
    para = [];
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (line.startsWith("```")) {
      flush();
      list = null;
      const code = [];
      for (i++; i < lines.length && !lines[i].startsWith("```"); i++) code.push(lines[i]);
      out.push(el("pre", { class: "log" }, code.join("\n")));
      continue;
    }
    const h = line.match(/^(#{1,4})\s+(.*)$/);
    const li = line.match(/^\s*(?:[-*]|\d+\.)\s+(.*)$/);
    if (h) {
      flush();
      list = null;
      out.push(el("h" + Math.min(6, h[1].length + 2), {}, ...inline(h[2])));
    } else if (li) {
      flush();
      if (!list) {
        list = el("ul");
        out.push(list);
      }
      list.append(el("li", {}, ...inline(li[1])));
    } else if (!line.trim()) {
      flush();
      list = null;
    } else {
      list = null;
      para.push(line.trim());
    }
  }
  flush();
  return out;
}

function inline(text) {
  const parts = [];
  const re = /(`[^`]+`|\*\*[^*]+\*\*|\*[^*]+\*)/g;
  let last = 0;
  for (const m of text.matchAll(re)) {
    if (m.index > last) parts.push(text.slice(last, m.index));
    const t = m[0];
    if (t.startsWith("`")) parts.push(el("code", {}, t.slice(1, -1)));
    else if (t.startsWith("**")) parts.push(el("strong", {}, t.slice(2, -2)));
    else parts.push(el("em", {}, t.slice(1, -1)));
    last = m.index + t.length;
  }
  if (last < text.length) parts.push(text.slice(last));
  return parts;
}

