// compare.html and a sweep's report.html: two charts, each with a selector of every metric the
// runs recorded; runs of one seed group as its mean with a min-max band (or as single runs);
// the runs table sorts by any column. compare_report.cpp shapes the data.
'use strict';

(function () {
  const data = runner.data();
  const holder = document.getElementById('charts');
  const controls = document.getElementById('controls');
  const byId = {};
  for (const m of data.metrics) byId[m.id] = m;
  let grouped = data.grouped;
  const charts = [null, null];
  window.runnerCharts = charts;

  // The seed groups in order of their first run: {label, members: [run index...]}.
  function groups() {
    const out = [];
    const at = {};
    data.runs.forEach((run, i) => {
      if (!(run.group in at)) {
        at[run.group] = out.length;
        out.push({label: run.group, members: []});
      }
      out[at[run.group]].members.push(i);
    });
    return out;
  }

  // Mean, min and max over the members at each x any of them has.
  function summarise(metric, members) {
    const values = new Map();
    for (const i of members)
      for (const [x, y] of metric.runs[i]) {
        if (y === null || !isFinite(y)) continue;
        if (!values.has(x)) values.set(x, []);
        values.get(x).push(y);
      }
    const xs = Array.from(values.keys()).sort((a, b) => a - b);
    const mean = [], low = [], high = [];
    for (const x of xs) {
      const ys = values.get(x);
      mean.push({x: x, y: ys.reduce((a, b) => a + b, 0) / ys.length});
      low.push({x: x, y: Math.min(...ys)});
      high.push({x: x, y: Math.max(...ys)});
    }
    return {mean: mean, low: low, high: high};
  }

  function datasets(metric) {
    const out = [];
    const style = (colour, i) => ({
      borderColor: colour.line,
      backgroundColor: colour.line,
      borderWidth: 1.6,
      pointRadius: metric.x === 'epoch' ? 2.5 : 0,
      pointHoverRadius: 4,
      runnerGroup: i,
    });
    if (grouped) {
      const list = groups();
      const colours = runner.colours(list.length);
      list.forEach((g, i) => {
        const s = summarise(metric, g.members);
        if (g.members.length > 1) {
          out.push({data: s.low, borderWidth: 0, pointRadius: 0, fill: false, runnerLegend: false,
                    runnerGroup: i, label: g.label + ' min'});
          out.push({data: s.high, borderWidth: 0, pointRadius: 0, fill: '-1',
                    backgroundColor: colours[i].band, runnerLegend: false, runnerGroup: i,
                    label: g.label + ' max'});
        }
        out.push(Object.assign({label: g.label + (g.members.length > 1 ? ' mean' : ''),
                                data: s.mean}, style(colours[i], i)));
      });
    } else {
      const colours = runner.colours(data.runs.length);
      data.runs.forEach((run, i) => {
        // The best run's line is drawn thicker, as its table row is highlighted.
        out.push(Object.assign({label: run.label, data: runner.points(metric.runs[i])},
                               style(colours[i], i), run.best ? {borderWidth: 2.6} : {}));
      });
    }
    return out;
  }

  function legendEntries() { return grouped ? groups().length : data.runs.length; }

  const boxes = [];
  const selects = [];
  function draw(k) {
    if (charts[k]) charts[k].destroy();
    const metric = byId[selects[k].value];
    boxes[k].querySelector('h3').textContent = metric.title;
    charts[k] = runner.lineChart(boxes[k].querySelector('canvas'), metric, datasets(metric));
    charts[k].runnerMetric = metric.id;
  }

  function addControl(labelText, element) {
    const label = document.createElement('label');
    label.textContent = labelText + ' ';
    label.appendChild(element);
    controls.appendChild(label);
  }

  if (!data.metrics.length) {
    holder.textContent = 'No metrics recorded yet.';
  } else {
    const fallback = [data.metrics[0].id, data.metrics[data.metrics.length - 1].id];
    for (let k = 0; k < 2; ++k) {
      const select = document.createElement('select');
      select.id = 'metric-' + (k + 1);
      for (const m of data.metrics) {
        const option = document.createElement('option');
        option.value = m.id;
        option.textContent = m.title;
        select.appendChild(option);
      }
      select.value = byId[data.selected[k]] ? data.selected[k] : fallback[k];
      select.addEventListener('change', () => draw(k));
      selects.push(select);
      addControl(k === 0 ? 'left chart:' : 'right chart:', select);
      const canvas = runner.chartBox(holder, 'chart-' + (k + 1), '', legendEntries());
      boxes.push(canvas.parentNode.parentNode);
    }
    if (data.grouped) {
      const toggle = document.createElement('input');
      toggle.type = 'checkbox';
      toggle.id = 'group-seeds';
      toggle.checked = true;
      toggle.addEventListener('change', () => {
        grouped = toggle.checked;
        for (const box of boxes)
          box.querySelector('.canvas').style.height =
              (300 + 22 * Math.ceil(Math.max(0, legendEntries() - 4) / 4)) + 'px';
        draw(0);
        draw(1);
      });
      addControl('runs that differ only by seed: mean and min-max band', toggle);
    }
    draw(0);
    draw(1);
    const keys = Object.keys(data.keys).filter((k) => k !== data.keys[k]);
    if (keys.length) {
      const note = document.createElement('p');
      note.className = 'keys';
      note.textContent = 'Names: ' + keys.map((k) => k + ' = ' + data.keys[k]).join(', ');
      holder.parentNode.appendChild(note);
    }
  }

  // The runs table: a click on a heading sorts by that column (numbers as numbers).
  const table = document.getElementById('runs');
  if (table) {
    table.querySelectorAll('thead th').forEach((th, column) => {
      th.addEventListener('click', () => {
        const descending = th.getAttribute('aria-sort') === 'ascending';
        table.querySelectorAll('thead th').forEach((h) => h.removeAttribute('aria-sort'));
        th.setAttribute('aria-sort', descending ? 'descending' : 'ascending');
        const body = table.tBodies[0];
        const key = (row) => {
          const c = row.cells[column];
          return c.hasAttribute('data-sort') ? c.getAttribute('data-sort') : c.textContent;
        };
        const rows = Array.from(body.rows);
        const numeric = rows.every((r) => key(r) === '' || key(r) === 'n/a' || isFinite(Number(key(r))));
        rows.sort((a, b) => {
          let order;
          if (numeric) {
            const x = key(a) === '' || key(a) === 'n/a' ? -Infinity : Number(key(a));
            const y = key(b) === '' || key(b) === 'n/a' ? -Infinity : Number(key(b));
            order = x - y;
          } else {
            order = key(a).localeCompare(key(b), undefined, {numeric: true});
          }
          return descending ? -order : order;
        });
        for (const row of rows) body.appendChild(row);
      });
    });
  }
  // Runs of more than one global batch: throughput and the ranking metric against it.
  const scaling = document.getElementById('scaling');
  window.runnerScalingCharts = scaling ? runner.drawCharts(scaling, data.scaling || []) : [];
})();
