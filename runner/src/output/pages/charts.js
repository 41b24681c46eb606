// What report.js and compare.js share: the pages' one number format (html_page.cpp's number3 and
// si3, the same rule) and a Chart.js line chart set up by the pages' rules: legend below the
// plot, round ticks, whole epochs, values on hover, series toggled from the legend.
'use strict';

const runner = {};

// "0.500" -> "0.5"; a text without a point is left alone.
runner.dropTrailingZeros = function (text) {
  if (text.indexOf('.') < 0) return text;
  return text.replace(/0+$/, '').replace(/\.$/, '');
};

// 3 significant digits; exponent form below 0.001 and from 10^6 on; "n/a" for no number.
runner.number3 = function (v) {
  if (v === null || v === undefined || !isFinite(v)) return 'n/a';
  if (v === 0) return '0';
  const a = Math.abs(v);
  if (a < 1e-3 || a >= 1e6) {
    const [mantissa, exponent] = v.toExponential(2).split('e');
    return runner.dropTrailingZeros(mantissa) + 'e' + exponent;
  }
  const magnitude = Math.floor(Math.log10(a));
  if (magnitude >= 3) {
    const unit = Math.pow(10, magnitude - 2);
    return String(Math.round(v / unit) * unit);
  }
  return runner.dropTrailingZeros(v.toFixed(2 - magnitude));
};

// number3 with an SI prefix from 1000 on: 1.1k, 27.8M.
runner.si3 = function (v) {
  if (v === null || v === undefined || !isFinite(v) || Math.abs(v) < 1e3) return runner.number3(v);
  if (Math.abs(v) < 1e6) return runner.number3(v / 1e3) + 'k';
  if (Math.abs(v) < 1e9) return runner.number3(v / 1e6) + 'M';
  return runner.number3(v / 1e9) + 'G';
};

runner.formatter = function (name) { return name === 'si' ? runner.si3 : runner.number3; };

// Distinct colours for n series: matplotlib's tab10 up to 10, evenly spaced hues beyond.
runner.colours = function (n) {
  const tab10 = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd',
                 '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'];
  const out = [];
  for (let i = 0; i < n; ++i) {
    if (n <= 10) {
      const hex = tab10[i];
      const rgb = [1, 3, 5].map((k) => parseInt(hex.substr(k, 2), 16)).join(',');
      out.push({line: hex, band: 'rgba(' + rgb + ',0.16)'});
    } else {
      const hue = Math.round((i * 360) / n);
      out.push({line: 'hsl(' + hue + ',70%,40%)', band: 'hsla(' + hue + ',70%,40%,0.16)'});
    }
  }
  return out;
};

// A titled chart box appended to `holder`: returns the canvas to draw on. The canvas' box grows
// with the legend, so that 50 entries below the plot leave the plot its height.
runner.chartBox = function (holder, id, title, legendEntries) {
  const box = document.createElement('div');
  box.className = 'chart-box';
  box.id = id;
  const heading = document.createElement('h3');
  heading.textContent = title;
  box.appendChild(heading);
  const area = document.createElement('div');
  area.className = 'canvas';
  area.style.height = (300 + 22 * Math.ceil(Math.max(0, legendEntries - 4) / 4)) + 'px';
  const canvas = document.createElement('canvas');
  area.appendChild(canvas);
  box.appendChild(area);
  holder.appendChild(box);
  return canvas;
};

// Points [[x, y], ...] as Chart.js wants them; a null y breaks the line.
runner.points = function (pairs) {
  return pairs.map((p) => ({x: p[0], y: p[1] === null ? NaN : p[1]}));
};

// A line chart of `datasets` (Chart.js datasets; `runnerLegend: false` keeps one out of the
// legend, `runnerGroup` toggles datasets together). spec: {x: 'epoch'|'step'|'lr', x_title,
// x_log, format, log}.
runner.lineChart = function (canvas, spec, datasets) {
  const y = runner.formatter(spec.format);
  const x = spec.x === 'epoch' || spec.x === 'lr' ? runner.number3 : runner.si3;  // steps, batches: si
  return new Chart(canvas, {
    type: 'line',
    data: {datasets: datasets},
    options: {
      animation: false,
      responsive: true,
      maintainAspectRatio: false,
      parsing: false,
      normalized: true,
      spanGaps: false,
      interaction: {mode: 'nearest', axis: 'x', intersect: false},
      scales: {
        x: spec.x_log ? {
          type: 'logarithmic',
          title: {display: true, text: spec.x_title},
          ticks: {callback: (v) => x(v)},
        } : {
          type: 'linear',
          title: {display: true, text: spec.x_title},
          ticks: {precision: 0, callback: (v) => x(v)},  // whole epochs and steps
        },
        y: {
          type: spec.log ? 'logarithmic' : 'linear',
          ticks: {callback: (v) => y(v)},
        },
      },
      plugins: {
        legend: {
          position: 'bottom',
          labels: {boxWidth: 14, filter: (item, data) => data.datasets[item.datasetIndex].runnerLegend !== false},
          onClick: (event, item, legend) => {
            const chart = legend.chart;
            const group = chart.data.datasets[item.datasetIndex].runnerGroup;
            const show = !chart.isDatasetVisible(item.datasetIndex);
            chart.data.datasets.forEach((d, i) => {
              if (d.runnerGroup === group) chart.setDatasetVisibility(i, show);
            });
            chart.update();
          },
        },
        tooltip: {
          filter: (item) => item.dataset.runnerLegend !== false,
          callbacks: {
            title: (items) => items.length ? spec.x_title + ' ' + x(items[0].parsed.x) : '',
            label: (item) => item.dataset.label + ': ' + y(item.parsed.y),
          },
        },
        decimation: {enabled: true, algorithm: 'lttb', samples: 1000},
      },
    },
  });
};

// Charts of `specs` ({id, title, x, x_title, x_log, format, log, series: [{name, points, dashed,
// markers, key, per_epoch}]}) appended to `holder`, one box each; returns the Chart objects.
runner.drawCharts = function (holder, specs) {
  const charts = [];
  for (const spec of specs) {
    const canvas = runner.chartBox(holder, spec.id, spec.title, spec.series.length);
    const colours = runner.colours(spec.series.length);
    const datasets = spec.series.map((s, i) => ({
      label: s.name,
      data: runner.points(s.points),
      borderColor: colours[i].line,
      backgroundColor: colours[i].line,
      borderWidth: 1.6,
      borderDash: s.dashed ? [6, 4] : [],
      pointRadius: s.markers || s.points.length <= 30 ? 3 : 0,
      pointHoverRadius: 4,
      runnerGroup: i,
      runnerKey: s.key,
      runnerPerEpoch: s.per_epoch,
    }));
    charts.push(runner.lineChart(canvas, spec, datasets));
  }
  return charts;
};

// The pages' data, written by the C++ side as JSON.
runner.data = function () {
  return JSON.parse(document.getElementById('runner-data').textContent);
};

window.runner = runner;
