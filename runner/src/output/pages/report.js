// report.html and lr_find.html: one chart per kind of series (run_report.cpp and lr_find_page.cpp
// shape them).
'use strict';

(function () {
  const data = runner.data();
  const holder = document.getElementById('charts');
  window.runnerCharts = runner.drawCharts(holder, data.charts);
  if (!data.charts.length) holder.textContent = 'No metrics recorded yet.';
})();
