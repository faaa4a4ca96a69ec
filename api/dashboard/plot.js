// A small SVG line-chart renderer for the dashboard (no library, no network).
// lineChart(title, series, formatValue) returns a <div class="chart"> holding an <svg> with
// axes, grid, time ticks and one polyline per series; series: [{label, color, dashed,
// points: [[unixSeconds, value|null], ...]}]. Null values break the line (a gap).
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";
const W = 560, H = 220, LEFT = 64, RIGHT = 12, TOP = 10, BOTTOM = 26;

function svgEl(name, attrs) {
  const el = document.createElementNS(SVG_NS, name);
  for (const [key, value] of Object.entries(attrs || {})) el.setAttribute(key, String(value));
  return el;
}

function niceMax(value) {
  if (!(value > 0)) return 1;
  const magnitude = Math.pow(10, Math.floor(Math.log10(value)));
  for (const step of [1, 2, 2.5, 5, 10]) {
    if (step * magnitude >= value) return step * magnitude;
  }
  return 10 * magnitude;
}

function clock(unixSeconds) {
  const d = new Date(unixSeconds * 1000);
  return String(d.getHours()).padStart(2, "0") + ":" + String(d.getMinutes()).padStart(2, "0");
}

function pathOf(points, x, y) {
  let d = "", pen = false;
  for (const [t, v] of points) {
    if (v === null || v === undefined || !isFinite(v)) { pen = false; continue; }
    d += (pen ? "L" : "M") + x(t).toFixed(1) + "," + y(v).toFixed(1);
    pen = true;
  }
  return d;
}

function lineChart(title, series, formatValue) {
  const box = document.createElement("div");
  box.className = "chart";
  const heading = document.createElement("div");
  heading.className = "title";
  heading.textContent = title;
  box.appendChild(heading);

  const all = series.flatMap((s) => s.points);
  const times = all.map((p) => p[0]);
  const values = all.map((p) => p[1]).filter((v) => v !== null && isFinite(v));
  const t0 = times.length ? Math.min(...times) : 0;
  const t1 = times.length ? Math.max(...times) : 1;
  const top = niceMax(values.length ? Math.max(...values) : 0);
  const x = (t) => LEFT + ((t - t0) / Math.max(t1 - t0, 1)) * (W - LEFT - RIGHT);
  const y = (v) => TOP + (1 - v / top) * (H - TOP - BOTTOM);

  const svg = svgEl("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": title });
  for (let i = 0; i <= 4; i++) {
    const v = (top * i) / 4;
    svg.appendChild(svgEl("line", { class: "grid", x1: LEFT, x2: W - RIGHT, y1: y(v), y2: y(v) }));
    const label = svgEl("text", { x: LEFT - 6, y: y(v) + 4, "text-anchor": "end" });
    label.textContent = formatValue(v);
    svg.appendChild(label);
  }
  for (let i = 0; i <= 4; i++) {
    const t = t0 + ((t1 - t0) * i) / 4;
    const anchor = i === 0 ? "start" : i === 4 ? "end" : "middle";
    const label = svgEl("text", { x: x(t), y: H - 8, "text-anchor": anchor });
    label.textContent = clock(t);
    svg.appendChild(label);
  }
  svg.appendChild(svgEl("line", { class: "axis", x1: LEFT, x2: LEFT, y1: TOP, y2: H - BOTTOM }));
  svg.appendChild(svgEl("line", { class: "axis", x1: LEFT, x2: W - RIGHT, y1: H - BOTTOM, y2: H - BOTTOM }));
  for (const s of series) {
    const d = pathOf(s.points, x, y);
    if (!d) continue;
    const attrs = { class: "series", d, stroke: s.color, "data-label": s.label };
    if (s.dashed) attrs["stroke-dasharray"] = "5 3";
    svg.appendChild(svgEl("path", attrs));
  }
  box.appendChild(svg);

  const legend = document.createElement("div");
  legend.className = "legend";
  for (const s of series) {
    const item = document.createElement("span");
    const swatch = document.createElement("i");
    swatch.style.borderTopColor = s.color;
    if (s.dashed) swatch.className = "dashed";
    item.appendChild(swatch);
    item.appendChild(document.createTextNode(s.label));
    legend.appendChild(item);
  }
  box.appendChild(legend);
  return box;
}

function formatBytes(v) {
  const units = ["B", "kB", "MB", "GB", "TB"];
  let i = 0;
  while (Math.abs(v) >= 1000 && i < units.length - 1) { v /= 1000; i++; }
  return (Math.round(v * 10) / 10) + " " + units[i];
}

function formatCount(v) {
  if (Math.abs(v) >= 1e6) return (Math.round(v / 1e5) / 10) + "M";
  if (Math.abs(v) >= 1e3) return (Math.round(v / 1e2) / 10) + "k";
  return String(Math.round(v * 10) / 10);
}

window.sluicePlot = { lineChart, formatBytes, formatCount };
