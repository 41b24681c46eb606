#pragma once
// report.html: one self-contained page per run (inline style, Chart.js and data; images as data
// URIs; no network), built from the files a run leaves in its directory: config.yaml,
// command.txt, env.json, metrics.jsonl (every series as a chart, the best epoch's confusion
// matrix), summary.json and best_examples.json. A failed or stopped run gets a page with what it
// has.

#include <filesystem>
#include <string>

namespace runner::output {

/// Writes `run_dir`/report.html. `status`: "finished", "stopped: ..." or "failed: ...".
/// Throws runner::Error when the file cannot be written.
void write_run_report(const std::filesystem::path& run_dir, const std::string& status);

}  // namespace runner::output
