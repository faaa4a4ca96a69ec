// The sluice dashboard: fabric overview (health, rollouts, drift) and per-switch plots, read
// from the sluice API with the same bearer token as the CLI. The token comes from the URL
// fragment (#token=...) or the form, and is kept in this tab's sessionStorage only.
"use strict";

const API = "/api/v1";
const TOKEN_KEY = "sluice-token";
const REFRESH_MS = 5000;
const COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2"];
const ACTIVE = new Set(["pending", "running", "paused", "rolling_back"]);

class ApiProblem extends Error {
  constructor(status, body) {
    super((body && (body.detail || body.title)) || "HTTP " + status);
    this.status = status;
    this.type = body && body.type;
  }
}

function $(id) { return document.getElementById(id); }

function takeTokenFromFragment() {
  const match = /(?:^#|&)token=([^&]+)/.exec(window.location.hash);
  if (match) {
    sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(match[1]));
    history.replaceState(null, "", window.location.pathname + window.location.search);
  }
}

async function api(path) {
  const token = sessionStorage.getItem(TOKEN_KEY);
  const response = await fetch(API + path, {
    headers: { Authorization: "Bearer " + token, Accept: "application/json" },
  });
  const body = await response.json().catch(() => null);
  if (!response.ok) throw new ApiProblem(response.status, body);
  return body;
}

function cell(row, text, className) {
  const td = document.createElement("td");
  td.textContent = text === null || text === undefined ? "–" : String(text);
  if (className) td.className = className;
  row.appendChild(td);
  return td;
}

function badge(state) {
  const span = document.createElement("span");
  span.className = "badge " + (state || "");
  span.textContent = state || "unknown";
  return span;
}

function fill(tableId, rows, makeRow) {
  const body = $(tableId).querySelector("tbody");
  body.replaceChildren();
  for (const item of rows) body.appendChild(makeRow(item));
  if (!rows.length) {
    const row = document.createElement("tr");
    const td = cell(row, "none");
    td.colSpan = $(tableId).querySelectorAll("thead th").length;
    td.className = "empty";
    body.appendChild(row);
  }
}

function showProblem(error) {
  const box = $("problem");
  if (!error) { box.hidden = true; return; }
  box.hidden = false;
  box.textContent = error.type && error.type.endsWith("prometheus-unreachable")
    ? "Telemetry unavailable: " + error.message
    : String(error.message);
}

function setFabricState(state) {
  const el = $("fabric-state");
  el.className = "badge " + (state || "");
  el.textContent = state ? "fabric " + state : "fabric ?";
}

function progress(rollout) {
  const counts = rollout.counts || {};
  const total = Object.entries(counts).filter(([k]) => !k.startsWith("rollback_")).reduce((a, [, v]) => a + v, 0);
  return (counts.applied_verified || 0) + "/" + total + " verified";
}

// --- overview -------------------------------------------------------------------------------

const RECENT_ROLLOUTS = 5;
const RECENT_HOST_RUNS = 5;

// A rollout's health gates in a few words: "pass (n readings)", or the first failed reading
// ("fail: gate value > limit, batch b"), or "none" for a rollout without gates.
function gateVerdict(detail) {
  const readings = (detail && detail.evaluations) || [];
  if (!readings.length) return { text: "none", state: "" };
  const failed = readings.find((e) => e.verdict !== "pass");
  if (!failed) return { text: "pass (" + readings.length + " readings)", state: "ok" };
  const where = failed.batch < 0 ? "pre-check" : "batch " + failed.batch;
  return { text: "fail: " + failed.gate + " " + failed.value + " > " + failed.limit + ", " + where, state: "critical" };
}

// One entry per kind of problem, critical first: its first reason and how many more alike.
function whyText(reasons) {
  const groups = new Map();
  for (const r of reasons) {
    if (!groups.has(r.check)) groups.set(r.check, []);
    groups.get(r.check).push(r);
  }
  const rank = (g) => (g.some((r) => r.state === "critical") ? 0 : 1);
  return [...groups.values()]
    .sort((a, b) => rank(a) - rank(b))
    .map((g) => g[0].where + ": " + g[0].detail + (g.length > 1 ? " (+" + (g.length - 1) + " more)" : ""))
    .join("; ");
}

// An idle switch is healthy: its agent reports no queue counter moving and nothing held.
function idleText(verdict) {
  if (!verdict || !verdict.idle) return "";
  return (verdict.reasons && verdict.reasons.length ? "; " : "") + "idle: no traffic (not a fault)";
}

async function renderOverview() {
  $("overview").hidden = false;
  $("crumbs").replaceChildren();
  const [switches, rollouts, drift, hostRuns] = await Promise.all([
    api("/switches?limit=500"), api("/rollouts?limit=20"), api("/drift?limit=10"),
    api("/hosts/runs?limit=" + RECENT_HOST_RUNS),
  ]);
  let health = null;
  try {
    health = await api("/health");
    showProblem(null);
  } catch (error) {
    if (error.status === 401) throw error;
    showProblem(error);
  }
  const bySwitch = new Map(((health && health.switches) || []).map((s) => [s.switch, s]));
  setFabricState(health && health.state);
  const fabricReasons = $("fabric-reasons");
  fabricReasons.replaceChildren(...((health && health.reasons) || []).map((r) => {
    const p = document.createElement("p");
    p.textContent = r.state + ": " + r.where + ": " + r.detail;
    return p;
  }));
  fill("switches", switches.items, (sw) => {
    const row = document.createElement("tr");
    const name = cell(row, "");
    const link = document.createElement("a");
    link.href = "/dashboard?switch=" + encodeURIComponent(sw.name);
    link.textContent = sw.name;
    name.appendChild(link);
    cell(row, sw.role);
    cell(row, (sw.ports || []).length, "num");
    const verdict = bySwitch.get(sw.name);
    cell(row, "").appendChild(badge(verdict && verdict.state));
    cell(row, whyText((verdict && verdict.reasons) || []) + idleText(verdict));
    return row;
  });
  const items = rollouts.items || [];
  fill("rollouts-active", items.filter((r) => ACTIVE.has(r.state)), (r) => {
    const row = document.createElement("tr");
    cell(row, r.id, "num");
    cell(row, r.from_version + " → " + r.to_version);
    cell(row, r.state);
    cell(row, progress(r));
    return row;
  });
  const last = items[0];
  $("rollout-last").textContent = last
    ? "#" + last.id + " version " + last.from_version + " → " + last.to_version + ": " + last.state + ", " + progress(last) + (last.reason ? " (" + last.reason + ")" : "")
    : "none yet";
  // The last rollout's health-gate readings (docs/rollouts.md, "Health gates").
  const detail = last ? await api("/rollouts/" + last.id) : null;
  fill("rollout-gates", (detail && detail.evaluations) || [], (e) => {
    const row = document.createElement("tr");
    cell(row, e.batch < 0 ? "pre" : e.batch, "num");
    cell(row, e.stage);
    cell(row, e.gate);
    cell(row, e.value, "num");
    cell(row, e.limit, "num");
    const verdict = badge(e.verdict === "pass" ? "ok" : "critical");
    verdict.textContent = e.verdict;
    cell(row, "").appendChild(verdict);
    return row;
  });
  // The latest rollouts with their gates' verdicts: a tuner's gated rollout that completed
  // and an operator's that a gate rolled back read side by side (docs/tuning.md).
  const recent = items.slice(0, RECENT_ROLLOUTS);
  const details = await Promise.all(recent.map((r) => (r === last ? detail : api("/rollouts/" + r.id))));
  fill("rollouts-recent", recent.map((r, i) => [r, details[i]]), ([r, d]) => {
    const row = document.createElement("tr");
    cell(row, r.id, "num");
    cell(row, r.from_version + " → " + r.to_version);
    cell(row, r.created_by);
    cell(row, r.state);
    const verdict = gateVerdict(d);
    const shown = badge(verdict.state);
    shown.textContent = verdict.text;
    cell(row, "").appendChild(shown);
    return row;
  });
  // Host applies are gated the same way (docs/rollouts.md, "Host applies"); a failed gate
  // reads "fail: ..." beside a state of rolled_back or halted.
  const applies = (hostRuns.items || []).filter((r) => r.mode === "apply");
  const runDetails = await Promise.all(applies.map((r) => api("/hosts/runs/" + r.id)));
  fill("host-runs-recent", applies.map((r, i) => [r, runDetails[i]]), ([r, d]) => {
    const row = document.createElement("tr");
    cell(row, r.id, "num");
    cell(row, r.intent_version);
    cell(row, r.requested_by);
    cell(row, r.state + (r.message ? " (" + r.message + ")" : ""));
    const verdict = gateVerdict(d);
    const shown = badge(verdict.state);
    shown.textContent = verdict.text;
    cell(row, "").appendChild(shown);
    return row;
  });
  fill("drift", drift.items || [], (d) => {
    const row = document.createElement("tr");
    cell(row, new Date(d.detected_at).toLocaleString());
    cell(row, d.switch);
    cell(row, d.table);
    cell(row, d.key + (d.field ? " " + d.field : ""));
    cell(row, d.action);
    return row;
  });
}

// --- one switch -----------------------------------------------------------------------------

function queueLabel(q) { return "q" + q.queue + (q.service_class ? " " + q.service_class : ""); }

// The port's PFC priorities: pause frames either way and the priority group's drops (a
// lossless class must drop none) and headroom watermark.
function pfcTable(rows) {
  const { formatBytes, formatCount } = window.sluicePlot;
  const table = document.createElement("table");
  table.className = "pfc";
  const head = document.createElement("tr");
  for (const h of ["PFC priority", "class", "pauses rx/s", "pauses tx/s", "PG drops/s", "headroom watermark"]) {
    const th = document.createElement("th");
    th.textContent = h;
    head.appendChild(th);
  }
  table.appendChild(head);
  for (const p of rows) {
    const row = document.createElement("tr");
    cell(row, p.priority);
    cell(row, p.service_class);
    cell(row, p.rx_pause_frames_per_s === null ? null : formatCount(p.rx_pause_frames_per_s), "num");
    cell(row, p.tx_pause_frames_per_s === null ? null : formatCount(p.tx_pause_frames_per_s), "num");
    const drops = p.pg_dropped_packets_per_s;
    cell(row, drops === null ? null : formatCount(drops), drops ? "num bad" : "num");
    cell(row, p.pg_headroom_watermark_bytes === null ? null : formatBytes(p.pg_headroom_watermark_bytes), "num");
    table.appendChild(row);
  }
  return table;
}

function portPanel(port, seriesDoc) {
  const { lineChart, formatBytes, formatCount } = window.sluicePlot;
  const panel = document.createElement("div");
  panel.className = "port";
  panel.dataset.port = port.port;
  const title = document.createElement("h2");
  const util = port.utilisation === null ? "–" : (100 * port.utilisation).toFixed(1) + " %";
  title.textContent = port.port + " · utilisation " + util;
  panel.appendChild(title);

  const table = document.createElement("table");
  const head = document.createElement("tr");
  for (const h of ["queue", "class", "tx", "marks/s", "mark frac", "drops/s", "occupancy", "threshold", "basis"]) {
    const th = document.createElement("th");
    th.textContent = h;
    head.appendChild(th);
  }
  table.appendChild(head);
  for (const q of port.queues) {
    const row = document.createElement("tr");
    cell(row, q.queue);
    cell(row, q.service_class);
    cell(row, q.tx_bytes_per_s === null ? null : formatBytes(q.tx_bytes_per_s) + "/s", "num");
    cell(row, q.ecn_marked_packets_per_s === null ? null : formatCount(q.ecn_marked_packets_per_s), "num");
    cell(row, q.mark_fraction === null ? null : q.mark_fraction.toFixed(3), "num");
    cell(row, q.dropped_packets_per_s === null ? null : formatCount(q.dropped_packets_per_s), "num");
    cell(row, q.occupancy_bytes === null ? null : formatBytes(q.occupancy_bytes), "num");
    cell(row, q.threshold_bytes === null ? null : formatBytes(q.threshold_bytes), "num");
    cell(row, q.pfc_storm_active ? (q.basis || "") + " · PFC storm" : q.basis, q.pfc_storm_active ? "bad" : undefined);
    table.appendChild(row);
  }
  panel.appendChild(table);
  if ((port.pfc || []).length) panel.appendChild(pfcTable(port.pfc));

  const queues = seriesDoc.queues;
  const color = (i) => COLORS[i % COLORS.length];
  const pick = (key, dashed) => queues.map((q, i) => ({
    label: queueLabel(q) + (key === "occupancy_bytes" ? " occupancy" : key === "threshold_bytes" ? " threshold" : ""),
    color: color(i), dashed, points: q.series[key] || [],
  }));
  const charts = document.createElement("div");
  charts.className = "charts";
  charts.appendChild(lineChart("Threshold in force (solid) and occupancy (dashed), bytes",
    [...pick("threshold_bytes", false), ...pick("occupancy_bytes", true)].filter((s) => s.points.length), formatBytes));
  const perSecond = (v) => formatBytes(v) + "/s";
  charts.appendChild(lineChart("Throughput", pick("tx_bytes_per_s", false), perSecond));
  charts.appendChild(lineChart("ECN-marked packets/s", pick("ecn_marked_packets_per_s", false), formatCount));
  panel.appendChild(charts);
  return panel;
}

async function renderSwitch(name) {
  $("switch").hidden = false;
  const crumbs = $("crumbs");
  const back = document.createElement("a");
  back.href = "/dashboard";
  back.textContent = "fabric";
  crumbs.replaceChildren(back, document.createTextNode(" / " + name));
  $("switch-title").textContent = name;
  const windowS = $("window").value;
  const enc = encodeURIComponent(name);
  let now;
  try {
    now = await api("/telemetry/switches/" + enc);
    showProblem(null);
  } catch (error) {
    if (error.status === 401) throw error;
    showProblem(error);
    return;
  }
  const agent = now.agent;
  $("switch-agent").textContent =
    "agent " + (agent.mode || "unknown") + (agent.algorithm ? " (" + agent.algorithm + ")" : "") +
    ", heartbeat " + (agent.heartbeat_age_s === null ? "–" : agent.heartbeat_age_s.toFixed(1) + " s") +
    ", orders v" + (agent.orders_version === null ? "–" : agent.orders_version) +
    "; stream " + (now.stream_up === null ? "unknown" : now.stream_up ? "up" : "down");
  const series = await Promise.all(now.ports.map((p) =>
    api("/telemetry/switches/" + enc + "/ports/" + encodeURIComponent(p.port) + "/series?window_s=" + windowS)));
  $("ports").replaceChildren(...now.ports.map((p, i) => portPanel(p, series[i])));
  const health = await api("/health").catch(() => null);
  setFabricState(health && health.state);
}

// --- start ----------------------------------------------------------------------------------

function askForToken() {
  $("login").hidden = false;
  $("overview").hidden = true;
  $("switch").hidden = true;
  $("sign-out").hidden = true;
}

async function render() {
  if (!sessionStorage.getItem(TOKEN_KEY)) { askForToken(); return; }
  $("login").hidden = true;
  $("sign-out").hidden = false;
  const name = new URLSearchParams(window.location.search).get("switch");
  try {
    if (name) await renderSwitch(name); else await renderOverview();
    document.body.dataset.rendered = String(Date.now());
  } catch (error) {
    if (error.status === 401) {
      sessionStorage.removeItem(TOKEN_KEY);
      askForToken();
      $("problem").hidden = false;
      $("problem").textContent = "The token was refused: " + error.message;
      return;
    }
    showProblem(error);
  }
}

document.addEventListener("DOMContentLoaded", () => {
  takeTokenFromFragment();
  $("login-form").addEventListener("submit", (event) => {
    event.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $("token").value.trim());
    $("problem").hidden = true;
    render();
  });
  $("sign-out").addEventListener("click", () => { sessionStorage.removeItem(TOKEN_KEY); askForToken(); });
  $("window").addEventListener("change", render);
  render();
  setInterval(() => { if (sessionStorage.getItem(TOKEN_KEY)) render(); }, REFRESH_MS);
});
