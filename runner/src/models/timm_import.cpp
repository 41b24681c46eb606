#include "models/timm_import.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>

#include "runner/error.hpp"
#include "runner_build_info.hpp"
#include "runner_timm_script.hpp"
#include "util/child_process.hpp"

namespace fs = std::filesystem;

namespace runner::models {
namespace {

/// FNV-1a, 64 bits: stable across builds and machines (std::hash is not).
uint64_t fnv1a(const std::string& text) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

/// An exclusive lock on `path` for the object's life.
class FileLock {
 public:
  explicit FileLock(const std::string& path) : fd_(::open(path.c_str(), O_RDWR | O_CREAT, 0644)) {
    if (fd_ >= 0) ::flock(fd_, LOCK_EX);
  }
  ~FileLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};

}  // namespace

TimmRequest timm_request_from(const nlohmann::json& model) {
  TimmRequest r;
  const std::string backbone = model.at("backbone").get<std::string>();
  r.name = backbone.rfind("timm/", 0) == 0 ? backbone.substr(5) : backbone;
  r.in_chans = model.value("in_chans", r.in_chans);
  r.num_classes = model.value("num_classes", r.num_classes);
  r.drop_path_rate = model.value("drop_path_rate", r.drop_path_rate);
  const nlohmann::json pretrained = model.value("pretrained", nlohmann::json(false));
  r.pretrained = pretrained.is_boolean() ? (pretrained.get<bool>() ? "true" : "false")
                                         : pretrained.get<std::string>();
  r.kwargs = model.value("kwargs", nlohmann::json::object());
  // model.drop_rate is create_model's drop_rate; 0 (the default) leaves the key and the cached
  // file's name as they were.
  if (const double drop_rate = model.value("drop_rate", 0.0); drop_rate > 0) {
    if (r.kwargs.contains("drop_rate"))
      throw ConfigError("model.drop_rate and model.kwargs.drop_rate are both set: keep one");
    r.kwargs["drop_rate"] = drop_rate;
  }
  return r;
}

std::string timm_python() {
  if (const char* python = std::getenv("RUNNER_PYTHON"); python && *python) return python;
  return RUNNER_BUILD_PYTHON;
}

std::string timm_cache_dir() {
  if (const char* cache = std::getenv("RUNNER_CACHE"); cache && *cache)
    return (fs::path(cache) / "timm").string();
  const char* home = std::getenv("HOME");
  return (fs::path(home && *home ? home : "/tmp") / ".cache" / "runner" / "timm").string();
}

std::string timm_cached_path(const TimmRequest& r) {
  // kwargs is a JSON object: dump() sorts its keys, so equal requests hash alike. The converter's
  // source is part of the key: a runner whose converter changed builds its files afresh.
  const std::string key = std::string(kTimmToTorchScript) + "|" + r.name + "|" +
                          std::to_string(r.in_chans) + "|" + std::to_string(r.num_classes) + "|" +
                          std::to_string(r.drop_path_rate) + "|" + r.pretrained + "|" +
                          r.kwargs.dump();
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a(key)));
  return (fs::path(timm_cache_dir()) / (r.name + "-" + hex + ".pt")).string();
}

void import_timm(const TimmRequest& r, const std::string& output) {
  const std::string python = timm_python();
  std::error_code ec;
  if (python.find('/') != std::string::npos && !fs::exists(python, ec))
    throw ConfigError("timm/" + r.name + " is built by timm in Python, and " + python +
                      " does not exist: run `make deps` (it creates .venv with torch and timm) "
                      "or set RUNNER_PYTHON to a Python that has them");
  // Weights come from the Hugging Face cache only, as for the native backbones.
  ::setenv("HF_HUB_OFFLINE", "1", 0);
  char drop_path[32];
  std::snprintf(drop_path, sizeof drop_path, "%.17g", r.drop_path_rate);
  const util::CommandResult result = util::run_command(
      {python, "-c", kTimmToTorchScript, "--name", r.name, "--in-chans", std::to_string(r.in_chans),
       "--num-classes", std::to_string(r.num_classes), "--drop-path-rate", drop_path,
       "--pretrained", r.pretrained, "--kwargs", r.kwargs.dump(), "--output", output});
  if (result.exit_code == 0) return;
  // The converter's reason is its last line; a crash shows its last line too.
  std::string reason = result.output;
  while (!reason.empty() && (reason.back() == '\n' || reason.back() == ' ')) reason.pop_back();
  if (const auto newline = reason.rfind('\n'); newline != std::string::npos)
    reason = reason.substr(newline + 1);
  if (result.exit_code == 127)
    throw ConfigError("timm/" + r.name + ": cannot run " + python + " (" + reason +
                      "): run `make deps` or set RUNNER_PYTHON");
  std::string advice;
  if (result.exit_code == 3)
    advice = "; a native backbone (runner plugins models) or another timm model may do";
  throw ConfigError("timm/" + r.name + ": " + (reason.empty() ? "the import failed" : reason) +
                    advice);
}

std::string timm_cached_or_imported(const TimmRequest& r) {
  const std::string path = timm_cached_path(r);
  std::error_code ec;
  // The description is renamed into place last: with it, the file is whole.
  if (fs::exists(path + ".json", ec)) return path;
  fs::create_directories(fs::path(path).parent_path(), ec);
  if (ec)
    throw ConfigError("cannot create the model cache " + fs::path(path).parent_path().string() +
                      " (" + ec.message() + "): set RUNNER_CACHE to a writable folder");
  FileLock lock(path + ".lock");
  if (!fs::exists(path + ".json", ec)) import_timm(r, path);
  return path;
}

}  // namespace runner::models
