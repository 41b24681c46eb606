#pragma once
// What report.html and compare.html share: escaping, the pages' one number format (the same
// rule as charts.js's runnerFormat, so a card and a chart's tooltip read alike) and the page
// shell, which carries Chart.js, the page's script, its style and its data inline: one file that
// opens offline.

#include <string>
#include <vector>

namespace runner::output::html {

/// `text` safe inside an element or a quoted attribute.
std::string escape(const std::string& text);

/// 3 significant digits, trailing zeros dropped: 0.435, 0.00105, 12.3, 1230; below 0.001 or from
/// 10^6 on in exponent form (6.05e-4, 1.23e+6); "0"; "n/a" for NaN and infinities.
std::string number3(double v);

/// number3 with an SI prefix from 1000 on (throughput, parameters): 560, 1.1k, 27.8M.
std::string si3(double v);

/// A wall time: "12.3 s", "4 min 05 s", "2 h 07 min".
std::string duration_text(double seconds);

/// A card: a label, a value and a note below it; `raw` (a number's full value) goes into
/// data-value so that the page's checks can compare the shown text with it.
std::string card(const std::string& id, const std::string& label, const std::string& value,
                 const std::string& note = "", const std::string& raw = "");

/// The whole page: `body` inside, `data_json` readable by `scripts` (names of page assets run
/// after Chart.js) as JSON.parse(document.getElementById("runner-data").textContent).
std::string page(const std::string& title, const std::string& body, const std::string& data_json,
                 const std::vector<std::string>& scripts);

}  // namespace runner::output::html
