#pragma once
// The files a report page carries inline, compiled into the binary at build time
// (cmake/embed_page_assets.cmake): "chart.js" (Chart.js 3, from Debian's libjs-chart.js),
// "page.css", "charts.js" (number format and chart drawing shared by the pages), "report.js"
// (report.html) and "compare.js" (compare.html and a sweep's report.html).

#include <string>
#include <string_view>

namespace runner::output {

/// The text of the asset `name`; empty for an unknown name.
std::string_view page_asset(const std::string& name);

}  // namespace runner::output
