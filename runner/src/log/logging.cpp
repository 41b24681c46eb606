#include "log/logging.hpp"

#include <spdlog/sinks/ansicolor_sink.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <memory>
#include <mutex>

#include "launch/world_env.hpp"
#include "runner/error.hpp"

namespace runner::log {
namespace {

std::mutex g_mutex;
LogOptions g_options;
std::shared_ptr<spdlog::sinks::sink> g_file_sink;
// Lines logged before the log file exists (the run folder is made after the world starts and
// the precision is chosen): replayed into the file when it opens, so the file has every line
// the console showed.
constexpr size_t kEarlyLines = 512;
std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> g_early =
    std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(kEarlyLines);
std::FILE* g_console = nullptr;  // nullptr: stderr

spdlog::level::level_enum parse_level(const std::string& level) {
  if (level == "trace") return spdlog::level::trace;
  if (level == "debug") return spdlog::level::debug;
  if (level == "info") return spdlog::level::info;
  if (level == "warn" || level == "warning") return spdlog::level::warn;
  if (level == "error") return spdlog::level::err;
  throw ConfigError("unknown log level '" + level + "': use trace, debug, info, warn or error");
}

void install() {
  const auto level = parse_level(g_options.level);
  const bool main_process = g_options.rank == 0;
  auto console = std::make_shared<spdlog::sinks::ansicolor_sink<spdlog::details::console_mutex>>(
      g_console ? g_console : stderr, spdlog::color_mode::automatic);
  // Non-main ranks stay quiet at INFO but always report warnings and errors.
  console->set_level(main_process ? level : std::max(level, spdlog::level::warn));
  // runner's own launcher tags each line of a rank's output itself; torchrun, srun and mpirun
  // do not.
  const std::string prefix =
      g_options.world_size > 1 && !main_process && !launch::launched_by_runner()
          ? "[rank " + std::to_string(g_options.rank) + "] "
          : "";
  console->set_pattern(prefix + "[%H:%M:%S] %^%l%$ %v");
  std::vector<spdlog::sink_ptr> sinks{console};
  if (!g_file_sink && g_early) {
    g_early->set_level(level);
    sinks.push_back(g_early);
  }
  if (g_file_sink) {
    g_file_sink->set_level(level);
    g_file_sink->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [rank " + std::to_string(g_options.rank) +
                             "] %l %v");
    sinks.push_back(g_file_sink);
  }
  if (g_file_sink && g_early) {
    for (const auto& early : g_early->last_raw()) g_file_sink->log(early);
    g_file_sink->flush();
    g_early.reset();  // one file per process: the early lines go into the first one
  }
  auto logger = std::make_shared<spdlog::logger>("runner", sinks.begin(), sinks.end());
  logger->set_level(level);
  // Every line reaches the file at once: a rank that is killed (-9, OOM) leaves a readable log.
  // runner logs a few lines per log window, so this costs nothing measurable.
  logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(logger);
}

}  // namespace

void init_logging(const LogOptions& options) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_options = options;
  if (!options.file.empty())
    g_file_sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(options.file, false);
  install();
}

void set_log_file(const std::string& path) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_file_sink =
      path.empty() ? nullptr : std::make_shared<spdlog::sinks::basic_file_sink_mt>(path, false);
  install();
}

void set_console_file(std::FILE* console) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_console = console;
  install();
}

void file_only(spdlog::level::level_enum level, const std::string& message) {
  std::shared_ptr<spdlog::sinks::sink> file;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    file = g_file_sink;
  }
  if (!file || !file->should_log(level)) return;
  file->log(spdlog::details::log_msg("runner", level, message));
  if (level >= spdlog::level::warn) file->flush();
}

bool stdout_is_terminal() { return isatty(STDOUT_FILENO) != 0; }

}  // namespace runner::log
