#pragma once
// lr_find.html: the lr range test's losses against the learning rate (a log axis), raw and
// smoothed, with the suggested lr marked: the report pages' Chart.js, in one file that opens
// offline.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace runner::output {

struct LrFindPage {
  std::string experiment;                     ///< the experiment's name
  std::vector<double> lrs, losses, smoothed;  ///< one per step (a NaN loss breaks the line)
  std::optional<size_t> suggested;            ///< the suggested step's index
  std::string stop_reason;                    ///< why the test ended early, or ""
};

/// The page's HTML.
std::string lr_find_page(const LrFindPage& page);

}  // namespace runner::output
