// KafkaLite console: confirmations for destructive forms and the overview's live throughput chart.
// No framework and nothing fetched from elsewhere: this file is served by the broker itself.
"use strict";

document.addEventListener("submit", (event) => {
  const form = event.target;
  const question = form.getAttribute("data-confirm");
  if (question && !window.confirm(question)) event.preventDefault();
});

const SVG = "http://www.w3.org/2000/svg";
const KEEP = 150; // samples: five minutes at one poll every two seconds
const POLL_MS = 2000;

function human(bytesPerSecond) {
  const units = ["B/s", "KiB/s", "MiB/s", "GiB/s"];
  let value = bytesPerSecond;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) { value /= 1024; unit += 1; }
  return (unit === 0 ? value.toFixed(0) : value.toFixed(1)) + " " + units[unit];
}

function element(name, attributes) {
  const node = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, value);
  return node;
}

class RateChart {
  constructor(container) {
    this.container = container;
    this.source = container.getAttribute("data-source");
    this.samples = []; // {time, in, out, msgs} rates per second
    this.last = null;
    this.svg = element("svg", { viewBox: "0 0 600 200", preserveAspectRatio: "none", class: "chart-svg" });
    this.grid = element("g", { class: "grid" });
    this.areaIn = element("path", { class: "area in" });
    this.lineIn = element("polyline", { class: "line in" });
    this.lineOut = element("polyline", { class: "line out" });
    this.svg.append(this.grid, this.areaIn, this.lineIn, this.lineOut);
    this.scale = document.createElement("span");
    this.scale.className = "chart-scale";
    container.append(this.svg, this.scale);
    this.poll();
    window.setInterval(() => this.poll(), POLL_MS);
  }

  async poll() {
    let totals;
    try {
      const response = await fetch(this.source, { cache: "no-store", credentials: "same-origin" });
      if (!response.ok) return;
      totals = await response.json();
    } catch (error) {
      return; // broker restarting or gone: keep the last picture
    }
    if (this.last !== null && totals.time > this.last.time) {
      const seconds = totals.time - this.last.time;
      this.samples.push({
        in: Math.max(0, totals.bytes_in - this.last.bytes_in) / seconds,
        out: Math.max(0, totals.bytes_out - this.last.bytes_out) / seconds,
        msgs: Math.max(0, totals.messages_in - this.last.messages_in) / seconds,
      });
      if (this.samples.length > KEEP) this.samples.shift();
      this.draw();
    }
    this.last = totals;
    for (const key of ["topics", "partitions", "messages", "connections"]) {
      const node = document.getElementById("stat-" + key);
      if (node && totals[key] !== null) node.textContent = totals[key].toLocaleString("en-US");
    }
  }

  draw() {
    const latest = this.samples[this.samples.length - 1];
    document.getElementById("rate-in").textContent = human(latest.in);
    document.getElementById("rate-out").textContent = human(latest.out);
    document.getElementById("rate-msgs").textContent = Math.round(latest.msgs).toLocaleString("en-US") + " records/s in";
    const peak = Math.max(1024, ...this.samples.map((s) => Math.max(s.in, s.out)));
    // until five minutes are collected the samples so far span the whole width
    const span = Math.max(this.samples.length - 1, 1);
    const x = (i) => (600 * i) / span;
    const y = (value) => 195 - (185 * value) / peak;
    const points = (key) => this.samples.map((s, i) => `${x(i).toFixed(1)},${y(s[key]).toFixed(1)}`).join(" ");
    this.lineIn.setAttribute("points", points("in"));
    this.lineOut.setAttribute("points", points("out"));
    const first = x(0).toFixed(1);
    const lastX = x(this.samples.length - 1).toFixed(1);
    this.areaIn.setAttribute("d", `M${first},195 L${points("in").replaceAll(" ", " L")} L${lastX},195 Z`);
    this.grid.replaceChildren(
      ...[0.25, 0.5, 0.75, 1].map((f) => element("line", { x1: 0, x2: 600, y1: y(peak * f), y2: y(peak * f) })),
    );
    this.scale.textContent = "peak " + human(peak);
  }
}

document.addEventListener("DOMContentLoaded", () => {
  const chart = document.getElementById("rate-chart");
  if (chart) new RateChart(chart);
});
