// Distill dashboard: draws the run page's charts from the JSON API and keeps its status live.
// The pages are complete without this file (every number is in a table); it only adds the charts and polling.
"use strict";

const PALETTE = ["#2459a8", "#d9822b", "#1f7a3f", "#b3261e", "#7b4fb5", "#2a9d8f", "#8a5a00", "#5d6875", "#c2185b", "#00838f"];
const POLL_MS = 2000;

async function getJSON(url) {
  const response = await fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" });
  if (!response.ok) throw new Error(`${url}: ${response.status}`);
  return response.json();
}

function draw(id, config) {
  const canvas = document.getElementById(id);
  if (!canvas || typeof Chart === "undefined") return null;
  const old = Chart.getChart(canvas);
  if (old) old.destroy();
  config.options = Object.assign({ animation: false, responsive: true, interaction: { mode: "index", intersect: false } },
                                 config.options || {});
  return new Chart(canvas, config);
}

const percentAxis = (title) => ({ min: 0, max: 1, title: { display: true, text: title },
                                  ticks: { callback: (v) => `${Math.round(v * 100)}%` } });
const generationAxis = { title: { display: true, text: "generation" } };

// Win rate of the promoted student and PPO model against the first table, with its 95% interval as a band.
function winRateChart(detail) {
  const records = detail.generations;
  const labels = records.map((r) => r.generation);
  const datasets = [];
  [["student", "student_win_rate", "student_win_low", "student_win_high", PALETTE[0]]].forEach(([name, rate, low, high, color]) => {
    datasets.push({ label: `${name} 95% low`, data: records.map((r) => r[low]), borderWidth: 0, pointRadius: 0, fill: false });
    datasets.push({ label: `${name} 95% high`, data: records.map((r) => r[high]), borderWidth: 0, pointRadius: 0,
                    fill: "-1", backgroundColor: color + "33" });
    datasets.push({ label: `${name} win rate`, data: records.map((r) => r[rate]), borderColor: color, backgroundColor: color });
  });
  const table = (r) => Object.keys((r.evaluation || {}).ppo || {})[0];
  const ppo = (r, key) => { const t = table(r); return t ? r.evaluation.ppo[t][key] : null; };
  datasets.push({ label: "PPO 95% low", data: records.map((r) => ppo(r, "win_low")), borderWidth: 0, pointRadius: 0, fill: false });
  datasets.push({ label: "PPO 95% high", data: records.map((r) => ppo(r, "win_high")), borderWidth: 0, pointRadius: 0,
                  fill: "-1", backgroundColor: PALETTE[1] + "33" });
  datasets.push({ label: "PPO win rate", data: records.map((r) => r.ppo_win_rate), borderColor: PALETTE[1], backgroundColor: PALETTE[1] });
  if (detail.thresholds.ppo_floor !== null) {
    datasets.push({ label: "PPO export floor", data: records.map(() => detail.thresholds.ppo_floor), borderColor: PALETTE[3],
                    borderDash: [6, 4], pointRadius: 0, borderWidth: 1.5 });
  }
  draw("chart-winrate", { type: "line", data: { labels, datasets },
    options: { scales: { x: generationAxis, y: percentAxis("win rate vs the first table") },
               plugins: { legend: { labels: { filter: (item) => !item.text.includes("95%") } } } } });
}

function accuracyChart(detail) {
  const records = detail.generations;
  draw("chart-accuracy", { type: "line", data: { labels: records.map((r) => r.generation), datasets: [
    { label: "holdout accuracy", data: records.map((r) => r.holdout_accuracy), borderColor: PALETTE[2], backgroundColor: PALETTE[2] },
    { label: "student win rate", data: records.map((r) => r.student_win_rate), borderColor: PALETTE[0], backgroundColor: PALETTE[0] },
    { label: "accuracy floor", data: records.map(() => detail.thresholds.accuracy_floor), borderColor: PALETTE[3],
      borderDash: [6, 4], pointRadius: 0, borderWidth: 1.5 },
  ] }, options: { scales: { x: generationAxis, y: percentAxis("share") } } });
}

function compositionChart(detail) {
  const points = detail.composition;
  const sources = [...new Set(points.flatMap((p) => Object.keys(p.share)))].sort();
  draw("chart-composition", { type: "bar", data: { labels: points.map((p) => p.generation),
    datasets: sources.map((source, i) => ({ label: source, data: points.map((p) => p.share[source] || 0),
                                            backgroundColor: PALETTE[i % PALETTE.length] })) },
    options: { scales: { x: Object.assign({ stacked: true }, generationAxis),
                         y: Object.assign({ stacked: true }, percentAxis("share of the student's rows")) } } });
}

function ratingsChart(id, detail, key, title) {
  const points = detail.ratings;
  const players = [...new Set(points.flatMap((p) => p.standings.map((s) => s.name)))].sort();
  const value = (p, name) => { const s = p.standings.find((x) => x.name === name); return s ? s[key] : null; };
  draw(id, { type: "line", data: { labels: points.map((p) => p.generation),
    datasets: players.map((name, i) => ({ label: name, data: points.map((p) => value(p, name)), spanGaps: true,
                                          borderColor: PALETTE[i % PALETTE.length], backgroundColor: PALETTE[i % PALETTE.length] })) },
    options: { scales: { x: generationAxis, y: { title: { display: true, text: title } } } } });
}

async function drawRun(name) {
  const detail = await getJSON(`/api/distill/run?name=${encodeURIComponent(name)}`);
  winRateChart(detail);
  accuracyChart(detail);
  compositionChart(detail);
  ratingsChart("chart-elo", detail, "elo", "Elo (heuristic = 1500)");
  ratingsChart("chart-ordinal", detail, "ordinal", "ordinal (mu - 3 sigma)");
  document.body.dataset.drawn = String(detail.generations.length);
}

async function pollStatus(name) {
  try {
    const status = await getJSON(`/api/distill/status?name=${encodeURIComponent(name)}`);
    for (const element of document.querySelectorAll("[data-field]")) {
      const value = status[element.dataset.field];
      element.textContent = value === null || value === undefined ? (element.dataset.field === "message" ? "" : "-") : String(value);
      if (element.dataset.field === "status") element.className = `badge ${value}`;
    }
    for (const action of ["pause", "resume", "stop"]) {
      const button = document.getElementById(action);
      if (button) button.disabled = !status.controls.includes(action);
    }
    if (String(status.generations_recorded) !== document.body.dataset.generations) {
      window.location.reload();  // a generation finished: its tables and charts are new
      return;
    }
  } catch (error) {
    console.warn("status poll failed", error);
  }
  window.setTimeout(() => pollStatus(name), POLL_MS);
}

document.addEventListener("DOMContentLoaded", () => {
  const name = document.body.dataset.run;
  if (document.body.dataset.page === "run" && name) {
    drawRun(name).catch((error) => console.warn("charts failed", error));
    window.setTimeout(() => pollStatus(name), POLL_MS);
  }
});
