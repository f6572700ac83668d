// Distill dashboard: draws the run page's charts from the JSON API and keeps its status live.
// The pages are complete without this file (every number is in a table); it only adds the charts and polling.
"use strict";

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
  config.options = Object.assign({ animation: false, responsive: true, maintainAspectRatio: false,
                                   interaction: { mode: "index", intersect: false } }, config.options || {});
  return new Chart(canvas, config);
}

// A value as the axis shows it: a percent axis shows percents (0.253 -> "25.3%").
const inUnit = (unit, v) => v === null || v === undefined ? "-"
  : unit === "percent" ? `${(v * 100).toFixed(1)}%` : (Math.abs(v) >= 100 ? v.toFixed(0) : Number(v.toPrecision(4)).toString());

// Draws a chart the server specified (toolkit/serve/charts.py): its series, styles, axes and units as given.
function drawSpec(spec) {
  const datasets = [];
  spec.lines.forEach((line) => {
    const points = !line.reference && line.marker !== "none";
    if (line.low && line.high) {
      const band = { data: line.low, borderWidth: 0, pointRadius: 0, pointHitRadius: 0, fill: false, order: line.order + 10, band: true };
      datasets.push(Object.assign({ label: `${line.label} 95% low` }, band));
      datasets.push(Object.assign({ label: `${line.label} 95% high` }, band, { data: line.high, fill: "-1", backgroundColor: line.color + "26" }));
    }
    datasets.push({ label: line.label, data: line.data, borderColor: line.color, backgroundColor: spec.kind === "bar" ? line.color : line.color,
                    borderDash: line.dash, borderWidth: spec.kind === "bar" ? 0 : line.width, order: line.order, spanGaps: true,
                    pointStyle: points ? line.marker : "line", pointRadius: points ? 4 : 0, pointHoverRadius: points ? 6 : 0,
                    notes: line.notes, reference: line.reference });
  });
  const tick = (v) => spec.unit === "percent" ? `${Math.round(v * 100)}%` : inUnit(spec.unit, v);
  const y = { stacked: spec.stacked, title: { display: true, text: spec.y_label }, ticks: { callback: tick } };
  if (spec.unit === "percent") Object.assign(y, { min: 0, max: 1 });
  return draw(spec.id, { type: spec.kind, data: { labels: spec.x, datasets },
    options: { scales: { x: { stacked: spec.stacked, title: { display: true, text: spec.x_label } }, y },
      plugins: {
        legend: { labels: { usePointStyle: true, sort: (a, b) => a.datasetIndex - b.datasetIndex,
                            filter: (item, data) => !data.datasets[item.datasetIndex].band } },
        tooltip: { filter: (item) => !item.dataset.band && item.raw !== null,
          callbacks: {
            title: (items) => items.length ? `${spec.x_label} ${items[0].label}` : "",
            label: (item) => {
              const note = (item.dataset.notes || [])[item.dataIndex];
              return `${item.dataset.label}: ${inUnit(spec.unit, item.raw)}${note ? ` (${note})` : ""}`;
            } } } } } });
}

async function drawRun(name) {
  const detail = await getJSON(`/api/distill/run?name=${encodeURIComponent(name)}`);
  detail.charts.forEach(drawSpec);
  detail.curves.forEach((gen) => gen.charts.forEach(drawSpec));
  document.body.dataset.drawn = String(detail.generations.length);
}

async function drawCompare(runs) {
  const query = runs.split(",").map((r) => `runs=${encodeURIComponent(r)}`).join("&");
  const compared = await getJSON(`/api/distill/compare?${query}`);
  compared.charts.forEach(drawSpec);
  document.body.dataset.drawn = String(compared.runs.length);
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
  if (document.body.dataset.page === "compare" && document.body.dataset.runs) {
    drawCompare(document.body.dataset.runs).catch((error) => console.warn("charts failed", error));
  }
});
