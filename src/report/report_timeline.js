// report_timeline.js - the interactive timeline of report.html (written by
// src/report/report_html.c, which embeds this file at build time). Plain
// ES2017, no libraries, nothing fetched; the page inlines it in a script
// element, so it must never hold that element's end tag or a comment opener.
// It reads the JSON of the element #sp-data: t0 (ns), span (ns), window (ns:
// the merging width), and lanes [{rank, region, colour, bars: [start, end,
// calls, ...]}] with start and end in ns from the first region entry. It
// builds one labelled lane per rank x region (div.lane with data-rank and
// data-region), the rank filter (a checkbox with data-rank per rank), and
// draws the bars on a canvas: wheel or +/- to zoom, drag to pan, hover for a
// tooltip. #timeline gets data-ready="yes" once built.
'use strict';
(function () {
  const src = document.getElementById('sp-data');
  if (!src) return;
  const data = JSON.parse(src.textContent);
  const LANE = 18, AXIS = 34;
  const root = document.getElementById('timeline');
  const labels = document.getElementById('tl-labels');
  const canvas = document.getElementById('tl-canvas');
  const tip = document.getElementById('tl-tip');
  const filter = document.getElementById('rank-filter');
  const ctx = canvas.getContext('2d');
  const span = Math.max(data.span, 1);
  let view = [0, span];
  let shown = [];

  // lanes and their labels
  const lanes = data.lanes.map(function (l) {
    const div = document.createElement('div');
    div.className = 'lane';
    div.dataset.rank = String(l.rank);
    div.dataset.region = l.region;
    div.title = l.region;
    const sw = document.createElement('span');
    sw.className = 'swatch';
    sw.style.background = l.colour;
    div.appendChild(sw);
    div.appendChild(document.createTextNode(l.rank + ' \u00b7 ' + l.region));
    labels.appendChild(div);
    return { rank: l.rank, region: l.region, colour: l.colour, bars: l.bars, div: div };
  });
  if (data.more) {
    // the regions of smaller totals left out, in one line under the lanes
    const more = document.createElement('p');
    more.className = 'note';
    more.id = 'tl-more';
    more.textContent = '\u2026 ' + data.more + ' more region' + (data.more === 1 ? '' : 's') +
      ' of smaller totals are not drawn (--include chooses; gantt_data.csv has every call).';
    root.parentNode.insertBefore(more, root.nextSibling);
  }

  // the rank filter: a checkbox per rank
  const ranks = Array.from(new Set(lanes.map(function (l) { return l.rank; })))
    .sort(function (a, b) { return a - b; });
  const on = new Map();
  ranks.forEach(function (r) {
    const label = document.createElement('label');
    const box = document.createElement('input');
    box.type = 'checkbox';
    box.checked = true;
    box.dataset.rank = String(r);
    box.addEventListener('change', function () { on.set(r, box.checked); layout(); });
    on.set(r, true);
    label.appendChild(box);
    label.appendChild(document.createTextNode(' ' + r));
    filter.appendChild(label);
  });

  function layout() {
    shown = lanes.filter(function (l) { return on.get(l.rank); });
    lanes.forEach(function (l) { l.div.hidden = !on.get(l.rank); });
    draw();
  }

  // seconds with the fewest decimals that show the step
  function secs(v, step) {
    const dec = step > 0 && step < 1 ? Math.min(9, Math.ceil(-Math.log10(step) - 1e-9)) : 0;
    return (Math.abs(v) < step * 1e-6 ? 0 : v).toFixed(dec);
  }
  function niceStep(x) {
    if (!(x > 0)) return 1;
    const p = Math.pow(10, Math.floor(Math.log10(x))), m = x / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
  }
  // sp_render_duration()'s rule (render_text.c): the unit in which the figure stays
  // below 1000 as printed, three significant digits, so the page and `summary` agree
  function duration(ns) {
    // x with d decimals as printf writes it: toFixed() rounds an exact tie
    // (2125 ns as 2.125 us, 12.25 us, 100.5 us) up, printf (the summary) to even
    function fixed(x, d) {
      const exact = Math.abs(x).toFixed(100), dot = exact.indexOf('.');
      if (!/^50*$/.test(exact.slice(dot + 1 + d))) return x.toFixed(d);
      const down = exact.slice(0, d ? dot + 1 + d : dot);
      return +down[down.length - 1] % 2 ? x.toFixed(d) : (x < 0 ? '-' : '') + down;
    }
    if (!isFinite(ns)) return '-';
    const units = ['ns', '\u00b5s', 'ms', 's'];
    let a = Math.abs(ns), u = 0;
    while (u < 3 && a >= 999.5) { a /= 1000; ns /= 1000; u++; }
    if (u === 0) return fixed(ns, 0) + ' ns';
    return fixed(ns, a < 9.995 ? 2 : a < 99.95 ? 1 : 0) + ' ' + units[u];
  }

  function width() { return Math.max(200, canvas.parentElement.clientWidth - labels.offsetWidth - 2); }

  function draw() {
    const w = width(), h = shown.length * LANE + AXIS, dpr = window.devicePixelRatio || 1;
    canvas.width = Math.round(w * dpr);
    canvas.height = Math.round(h * dpr);
    canvas.style.width = w + 'px';
    canvas.style.height = h + 'px';
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = '#ffffff';
    ctx.fillRect(0, 0, w, h);
    const a = view[0], k = w / (view[1] - view[0]);
    shown.forEach(function (l, i) {
      const y = i * LANE;
      if (i % 2) {
        ctx.fillStyle = '#f4f4f4';
        ctx.fillRect(0, y, w, LANE);
      }
      ctx.fillStyle = l.colour;
      const b = l.bars;
      for (let j = 0; j < b.length; j += 3) {
        const x0 = (b[j] - a) * k, x1 = (b[j + 1] - a) * k;
        if (x1 < 0 || x0 > w) continue;
        ctx.fillRect(x0, y + 2, Math.max(x1 - x0, 0.75), LANE - 4);
      }
    });
    // the time axis, in seconds from the first region entry
    const y = shown.length * LANE;
    ctx.fillStyle = '#000000';
    ctx.fillRect(0, y, w, 1);
    ctx.font = '11px sans-serif';
    ctx.textAlign = 'center';
    const step = niceStep((view[1] - view[0]) / 1e9 / 8);
    for (let t = Math.ceil(view[0] / 1e9 / step) * step; t * 1e9 <= view[1]; t += step) {
      const x = (t * 1e9 - a) * k;
      ctx.fillRect(x, y, 1, 5);
      ctx.fillText(secs(t, step), Math.min(Math.max(x, 12), w - 12), y + 17);
    }
    ctx.fillText('time since the first region entry [s]', w / 2, y + 31);
    root.dataset.view = view[0] + ',' + view[1];
  }

  function zoom(f, px) {
    const w = width(), pivot = view[0] + (px / w) * (view[1] - view[0]);
    let a = pivot - (pivot - view[0]) * f, b = pivot + (view[1] - pivot) * f;
    if (b - a < 100) return;                      // 100 ns across the canvas at most
    if (b - a > span) { a = 0; b = span; }
    view = [a, b];
    draw();
  }

  // the bar of lane l under time t (within tol ns), as an index into bars
  function hit(l, t, tol) {
    const b = l.bars;
    let lo = 0, hi = b.length / 3;                 // first bar starting after t + tol
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (b[mid * 3] <= t + tol) lo = mid + 1; else hi = mid;
    }
    for (let j = lo - 1; j >= 0 && j >= lo - 64; j--)
      if (b[j * 3 + 1] >= t - tol) return j * 3;
    return -1;
  }

  function hover(ev) {
    const r = canvas.getBoundingClientRect(), x = ev.clientX - r.left, y = ev.clientY - r.top;
    const i = Math.floor(y / LANE);
    if (i < 0 || i >= shown.length) { tip.hidden = true; return; }
    const l = shown[i], w = width(), per = (view[1] - view[0]) / w;
    const j = hit(l, view[0] + x * per, 2 * per);
    if (j < 0) { tip.hidden = true; return; }
    const b = l.bars, calls = b[j + 2];
    tip.textContent = '';
    const lines = [
      'region: ' + l.region, 'rank: ' + l.rank,
      'start: ' + (b[j] / 1e9).toFixed(6) + ' s', 'duration: ' + duration(b[j + 1] - b[j]),
    ];
    if (calls > 1) lines.push(calls + ' calls merged into this bar');
    lines.forEach(function (s) {
      const d = document.createElement('div');
      d.textContent = s;
      tip.appendChild(d);
    });
    tip.hidden = false;
    tip.style.left = (ev.pageX + 12) + 'px';
    tip.style.top = (ev.pageY + 12) + 'px';
  }

  let drag = null;
  canvas.addEventListener('wheel', function (ev) {
    ev.preventDefault();
    zoom(ev.deltaY < 0 ? 0.8 : 1.25, ev.offsetX);
  }, { passive: false });
  canvas.addEventListener('mousedown', function (ev) {
    drag = { x: ev.clientX, view: view.slice() };
    tip.hidden = true;
  });
  window.addEventListener('mousemove', function (ev) {
    if (!drag) {
      if (ev.target === canvas) hover(ev); else tip.hidden = true;
      return;
    }
    const dt = -(ev.clientX - drag.x) / width() * (drag.view[1] - drag.view[0]);
    view = [drag.view[0] + dt, drag.view[1] + dt];
    draw();
  });
  window.addEventListener('mouseup', function () { drag = null; });
  canvas.addEventListener('mouseleave', function () { tip.hidden = true; });
  document.getElementById('tl-zoom-in').addEventListener('click', function () { zoom(0.5, width() / 2); });
  document.getElementById('tl-zoom-out').addEventListener('click', function () { zoom(2, width() / 2); });
  document.getElementById('tl-reset').addEventListener('click', function () { view = [0, span]; draw(); });
  window.addEventListener('resize', draw);
  layout();
  root.dataset.lanes = String(lanes.length);
  root.dataset.ready = 'yes';
})();
