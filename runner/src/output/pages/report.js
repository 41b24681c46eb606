// report.html: one chart per kind of series in metrics.jsonl (run_report.cpp shapes them).
'use strict';

(function () {
  const data = runner.data();
  const holder = document.getElementById('charts');
  window.runnerCharts = [];
  for (const spec of data.charts) {
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
    window.runnerCharts.push(runner.lineChart(canvas, spec, datasets));
  }
  if (!data.charts.length) holder.textContent = 'No metrics recorded yet.';
})();
