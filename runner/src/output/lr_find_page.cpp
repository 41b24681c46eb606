#include "output/lr_find_page.hpp"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "output/html_page.hpp"

namespace runner::output {
namespace {

using nlohmann::json;

// [[lr, loss], ...]; a NaN or infinite loss as null (the line breaks there).
json points(const std::vector<double>& x, const std::vector<double>& y) {
  json out = json::array();
  for (size_t i = 0; i < x.size() && i < y.size(); ++i)
    out.push_back({x[i], std::isfinite(y[i]) ? json(y[i]) : json(nullptr)});
  return out;
}

}  // namespace

std::string lr_find_page(const LrFindPage& p) {
  json series = json::array({{{"name", "loss"}, {"points", points(p.lrs, p.losses)}},
                             {{"name", "smoothed"}, {"points", points(p.lrs, p.smoothed)}}});
  std::string suggestion = "none";
  if (p.suggested && *p.suggested < p.lrs.size()) {
    // A vertical line at the suggestion, over the smoothed loss's range.
    double lo = INFINITY, hi = -INFINITY;
    for (const double v : p.smoothed)
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
    const double at = p.lrs[*p.suggested];
    suggestion = html::number3(at);
    if (std::isfinite(lo))
      series.push_back({{"name", "suggested " + suggestion},
                        {"points", json::array({{at, lo}, {at, hi}})},
                        {"dashed", true}});
  }
  const json chart = {{"id", "lr-find"}, {"title", "lr range test"},
                      {"x", "lr"},       {"x_title", "learning rate"},
                      {"x_log", true},   {"format", ""},
                      {"series", series}};
  const std::string body =
      "<header><h1>" + html::escape(p.experiment) + ": lr range test</h1></header><main>" +
      "<section><div class=\"cards\" id=\"lr-find-result\">" +
      html::card(
          "suggested-lr", "suggested lr", suggestion,
          p.stop_reason.empty() ? std::to_string(p.lrs.size()) + " steps"
                                : "stopped: " + p.stop_reason,
          p.suggested && *p.suggested < p.lrs.size() ? html::number3(p.lrs[*p.suggested]) : "") +
      "</div></section><section><div class=\"charts\" id=\"charts\"></div></section></main>";
  return html::page(p.experiment + " - lr range test", body, json{{"charts", {chart}}}.dump(),
                    {"charts.js", "report.js"});
}

}  // namespace runner::output
