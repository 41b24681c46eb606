#include "remote_shards.hpp"

#include <curl/curl.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>
#include <vector>

#include "runner/error.hpp"

extern char** environ;

namespace runner::data {
namespace {

namespace fs = std::filesystem;

// How one try went: whole, or why not and whether another try may help.
struct Attempt {
  bool whole = false;
  bool worth_retrying = true;
  std::string why;
};

uint64_t fnv1a(const std::string& text) {
  uint64_t hash = 1469598103934665603ull;
  for (const unsigned char c : text) hash = (hash ^ c) * 1099511628211ull;
  return hash;
}

// The URL's last path part ("train-000003.tar"), or for a pipe command its last word that
// names a .tar.
std::string last_part(const std::string& url) {
  std::string tail;
  if (url.rfind("pipe:", 0) == 0) {
    std::istringstream words(url.substr(5));
    for (std::string word; words >> word;)
      if (word.find(".tar") != std::string::npos) tail = word;
  } else {
    tail = url.substr(0, url.find_first_of("?#"));
  }
  return tail.substr(tail.find_last_of('/') == std::string::npos ? 0 : tail.find_last_of('/') + 1);
}

// last_part with only characters safe in a file name.
std::string readable_tail(const std::string& url) {
  std::string tail = last_part(url);
  for (char& c : tail)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '_';
  if (tail.size() > 80) tail = tail.substr(tail.size() - 80);
  return tail.empty() ? "shard.tar" : tail;
}

uint64_t size_of(const std::string& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  return ec ? 0 : static_cast<uint64_t>(size);
}

size_t append_to_file(char* data, size_t size, size_t count, void* file) {
  return std::fwrite(data, size, count, static_cast<FILE*>(file)) * size;
}

// RUNNER_HTTP_HEADERS's "Name: value" lines as curl's header list.
curl_slist* headers_from_environment() {
  curl_slist* list = nullptr;
  const char* text = std::getenv("RUNNER_HTTP_HEADERS");
  if (!text) return nullptr;
  std::string line;
  for (const char* p = text;; ++p) {
    if (*p == '\n' || *p == '\0') {
      if (line.find(':') != std::string::npos) list = curl_slist_append(list, line.c_str());
      line.clear();
      if (*p == '\0') break;
    } else if (*p != '\r') {
      line += *p;
    }
  }
  return list;
}

// One libcurl request of `url` with what every request of ours sets: redirects, ~/.netrc, HTTP
// errors as failures, the connect timeout, RUNNER_HTTP_HEADERS.
struct HttpRequest {
  std::unique_ptr<CURL, void (*)(CURL*)> curl{curl_easy_init(), curl_easy_cleanup};
  std::unique_ptr<curl_slist, void (*)(curl_slist*)> headers{headers_from_environment(),
                                                             curl_slist_free_all};
  char error[CURL_ERROR_SIZE] = {0};

  HttpRequest(const std::string& url, const FetchOptions& o) {
    static const bool initialised = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
    (void)initialised;
    curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl.get(), CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(curl.get(), CURLOPT_NETRC, static_cast<long>(CURL_NETRC_OPTIONAL));
    curl_easy_setopt(curl.get(), CURLOPT_FAILONERROR, 1L);
    curl_easy_setopt(curl.get(), CURLOPT_ERRORBUFFER, error);
    curl_easy_setopt(curl.get(), CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(o.connect_timeout_s * 1000));
    curl_easy_setopt(curl.get(), CURLOPT_USERAGENT, "runner (webdataset shards)");
    if (headers) curl_easy_setopt(curl.get(), CURLOPT_HTTPHEADER, headers.get());
  }
  CURL* get() const { return curl.get(); }
};

// One GET of `url` appended to `part` from the byte it already holds (HTTP Range).
Attempt fetch_http(const std::string& url, const std::string& part, const FetchOptions& o) {
  const uint64_t from = size_of(part);
  std::unique_ptr<FILE, int (*)(FILE*)> out(std::fopen(part.c_str(), "ab"), std::fclose);
  if (!out) return {false, false, "cannot write " + part + " (" + std::strerror(errno) + ")"};
  HttpRequest curl(url, o);
  const char* error = curl.error;
  curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, append_to_file);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, out.get());
  // A server that stops sending: under 1 byte/s for a minute is a dropped connection.
  curl_easy_setopt(curl.get(), CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_LOW_SPEED_TIME, 60L);
  curl_easy_setopt(curl.get(), CURLOPT_RESUME_FROM_LARGE, static_cast<curl_off_t>(from));
  const CURLcode result = curl_easy_perform(curl.get());
  std::fflush(out.get());
  long status = 0;
  curl_off_t length = -1;
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &status);
  curl_easy_getinfo(curl.get(), CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
  out.reset();
  const uint64_t held = size_of(part);
  if (result == CURLE_OK) {
    if (length >= 0 && held != from + static_cast<uint64_t>(length))
      return {false, true,
              "the connection ended at byte " + std::to_string(held) + " of " +
                  std::to_string(from + static_cast<uint64_t>(length))};
    return {true, false, ""};
  }
  if (result == CURLE_RANGE_ERROR || (result == CURLE_HTTP_RETURNED_ERROR && status == 416)) {
    fs::remove(part);  // the server does not continue where we stopped: the next try starts over
    return {false, true, "the server does not resume (HTTP Range) at byte " + std::to_string(from)};
  }
  if (result == CURLE_HTTP_RETURNED_ERROR) {
    const bool transient = status >= 500 || status == 408 || status == 429;
    return {false, transient, "HTTP " + std::to_string(status)};
  }
  return {false, true,
          std::string(error[0] ? error : curl_easy_strerror(result)) + " at byte " +
              std::to_string(held)};
}

// `command` (a pipe: URL's) through /bin/sh with its stdout into `part`.
Attempt fetch_pipe(const std::string& command, const std::string& part) {
  const std::string errors = part + ".stderr";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, part.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, errors.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const char* argv[] = {"/bin/sh", "-c", command.c_str(), nullptr};
  pid_t pid = 0;
  const int spawned =
      posix_spawn(&pid, "/bin/sh", &actions, nullptr, const_cast<char* const*>(argv), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return {false, false, "cannot start /bin/sh"};
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::string last;
  std::ifstream in(errors);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) last = line;
  fs::remove(errors);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    if (size_of(part) > 0) return {true, false, ""};
    return {false, true, "the command wrote nothing to its stdout"};
  }
  const std::string how = WIFEXITED(status)
                              ? "exited with status " + std::to_string(WEXITSTATUS(status))
                              : "was killed by signal " + std::to_string(WTERMSIG(status));
  return {false, true, "the command " + how + (last.empty() ? "" : ": " + last)};
}

// flock(2) on the cache's lock file while it lives; nothing where the filesystem has no locks.
class FetchLock {
 public:
  explicit FetchLock(const std::string& file)
      : fd_(::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
    if (fd_ >= 0)
      while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
      }
  }
  ~FetchLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  FetchLock(const FetchLock&) = delete;
  FetchLock& operator=(const FetchLock&) = delete;

 private:
  int fd_;
};

// Whether the server answers for `url`, reading none of the shard: a GET of its first byte
// (a Range request), given up once the status is in. (A GET rather than HEAD: a URL presigned
// for GET, as an S3 bucket's, refuses HEAD.)
Attempt probe_http(const std::string& url, const FetchOptions& o) {
  HttpRequest curl(url, o);
  const char* error = curl.error;
  curl_easy_setopt(curl.get(), CURLOPT_RANGE, "0-0");
  curl_easy_setopt(
      curl.get(), CURLOPT_WRITEFUNCTION,
      +[](char*, size_t, size_t, void*) -> size_t { return 0; });  // stop at once
  const CURLcode result = curl_easy_perform(curl.get());
  long status = 0;
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &status);
  if (result == CURLE_OK || (result == CURLE_WRITE_ERROR && status < 400)) return {true, false, ""};
  if (result == CURLE_HTTP_RETURNED_ERROR) {
    const bool transient = status >= 500 || status == 408 || status == 429;
    return {false, transient, "HTTP " + std::to_string(status)};
  }
  return {false, true, error[0] ? error : curl_easy_strerror(result)};
}

// Whether a pipe: command can start: its program (the first word) is a file that runs, or a
// name on PATH. (A shell builtin or a word with shell syntax is taken as able.)
Attempt probe_pipe(const std::string& command) {
  std::istringstream words(command);
  std::string program;
  words >> program;
  if (program.empty()) return {false, false, "names no command"};
  if (program.find_first_of("=$`'\"\\(){};|&<>") != std::string::npos) return {true, false, ""};
  if (program.find('/') != std::string::npos)
    return ::access(program.c_str(), X_OK) == 0
               ? Attempt{true, false, ""}
               : Attempt{false, false, program + " is not a program this user can run"};
  for (const char* builtin : {"cd", "exec", "eval", "set", "test", "true", ":", "."})
    if (program == builtin) return {true, false, ""};
  const char* path = std::getenv("PATH");
  std::istringstream folders(path ? path : "/usr/bin:/bin");
  for (std::string folder; std::getline(folders, folder, ':');)
    if (!folder.empty() && ::access((folder + "/" + program).c_str(), X_OK) == 0)
      return {true, false, ""};
  return {false, false,
          "the command '" + program +
              "' is not on PATH (install it, or name it "
              "by its path)"};
}

// `attempt` tried until whole, a failure not worth retrying, or the retries are spent, pausing
// 1, 2, 4 ... backoff_s between; throws the last failure as a StorageError naming `url`.
template <class Try>
void with_retries(const std::string& url, const FetchOptions& options, Try attempt_once) {
  Attempt attempt;
  int tries = 0;
  for (; tries <= options.retries; ++tries) {
    if (tries > 0)
      std::this_thread::sleep_for(
          std::chrono::duration<double>(options.backoff_s * static_cast<double>(1 << (tries - 1))));
    attempt = attempt_once();
    if (attempt.whole) return;
    if (!attempt.worth_retrying) break;
  }
  const int made = std::min(tries + 1, options.retries + 1);
  throw StorageError(url + ": " + attempt.why +
                     (made > 1 ? " (after " + std::to_string(made) + " tries)" : "") +
                     "; check the URL and that the server (or the command) answers "
                     "(data.dataset.retries sets the tries)");
}

// The partial files of the fetches under way, removed when the process ends mid-fetch (a rank
// stopping with the others while its loader thread still tries a server that went away).
class PartialFiles {
 public:
  void add(const std::string& path) {
    const std::lock_guard<std::mutex> lock(mutex_);
    paths_.insert(path);
  }
  void drop(const std::string& path) {
    const std::lock_guard<std::mutex> lock(mutex_);
    paths_.erase(path);
  }
  ~PartialFiles() {
    const std::lock_guard<std::mutex> lock(mutex_);
    for (const std::string& path : paths_) ::unlink(path.c_str());
  }

 private:
  std::mutex mutex_;
  std::set<std::string> paths_;
};

PartialFiles& partial_files() {
  static PartialFiles files;
  return files;
}

// The cache's shards (not the lock, not a fetch under way), the least recently used first.
std::vector<std::pair<fs::path, uint64_t>> shards_by_use(const std::string& cache_dir) {
  std::vector<std::tuple<fs::file_time_type, fs::path, uint64_t>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(cache_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name[0] == '.' || name.find(".part-") != std::string::npos ||
        !entry.is_regular_file(ec))
      continue;
    found.emplace_back(entry.last_write_time(ec), entry.path(), entry.file_size(ec));
  }
  std::sort(found.begin(), found.end());
  std::vector<std::pair<fs::path, uint64_t>> out;
  for (auto& [when, path, size] : found) out.emplace_back(std::move(path), size);
  return out;
}

// Partial files of fetches that no longer run (a process killed mid-fetch, on this machine or
// another sharing the folder): a running fetch writes at least every minute (a slower server
// is a dropped connection), so one untouched for 10 minutes is left over.
void remove_stale_parts(const std::string& folder, const std::string& prefix,
                        bool whole_too = false) {
  const auto stale = fs::file_time_type::clock::now() - std::chrono::minutes(10);
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0 && (whole_too || name.find(".part-") != std::string::npos) &&
        entry.is_regular_file(ec) && entry.last_write_time(ec) < stale)
      fs::remove(entry.path(), ec);
  }
}

// While the cache holds more than its limit, its least recently used shards leave (not `kept`,
// the one just fetched). A run that has one open reads on: the file goes when it closes it.
void evict_to_limit(const FetchOptions& options, const fs::path& kept) {
  if (options.cache_bytes == 0) return;
  auto shards = shards_by_use(options.cache_dir);
  uint64_t held = 0;
  for (const auto& [path, size] : shards) held += size;
  std::error_code ec;
  for (const auto& [path, size] : shards) {
    if (held <= options.cache_bytes) break;
    if (path == kept) continue;
    if (fs::remove(path, ec)) held -= size;
  }
}

}  // namespace

bool is_remote_url(const std::string& url) {
  return url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0 ||
         url.rfind("pipe:", 0) == 0;
}

std::string cache_path(const std::string& url, const FetchOptions& options) {
  char hash[17];
  std::snprintf(hash, sizeof(hash), "%016llx", static_cast<unsigned long long>(fnv1a(url)));
  return (fs::path(options.cache_dir) / (std::string(hash) + "-" + readable_tail(url))).string();
}

std::string shard_name(const std::string& url) { return last_part(url); }

std::string cached_copy(const std::string& url, const FetchOptions& options) {
  if (options.cache_dir.empty()) return "";
  const std::string path = cache_path(url, options);
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return "";
  fs::last_write_time(path, fs::file_time_type::clock::now(), ec);  // used now: evicted last
  return path;
}

void fetch_shard(const std::string& url, const std::string& target, const FetchOptions& options) {
  // Our own partial file: ranks (and threads) fetching one shard at once each write theirs, and
  // rename the same bytes to the same name.
  static std::atomic<uint64_t> fetches{0};
  const std::string part =
      target + ".part-" + std::to_string(::getpid()) + "-" + std::to_string(fetches++);
  const bool pipe = url.rfind("pipe:", 0) == 0;
  std::error_code ec;
  partial_files().add(part);
  partial_files().add(part + ".stderr");
  const auto done = [&] {
    partial_files().drop(part);
    partial_files().drop(part + ".stderr");
  };
  try {
    with_retries(url, options, [&] {
      Attempt attempt = pipe ? fetch_pipe(url.substr(5), part) : fetch_http(url, part, options);
      if (attempt.whole) {
        fs::rename(part, target, ec);
        if (ec)
          return Attempt{false, false, "cannot keep it as " + target + " (" + ec.message() + ")"};
      }
      return attempt;
    });
  } catch (...) {
    fs::remove(part, ec);
    done();
    throw;
  }
  done();
}

std::string cached_shard(const std::string& url, const FetchOptions& options) {
  if (const std::string path = cached_copy(url, options); !path.empty()) return path;
  std::error_code ec;
  fs::create_directories(options.cache_dir, ec);
  if (ec)
    throw ConfigError("data.dataset.cache_dir " + options.cache_dir + ": cannot create it (" +
                      ec.message() + "); set it to a folder this user can write");
  // One fetch into the cache at a time (the ranks of a torchrun world, two runs on one cache):
  // the others wait, then find the shard there instead of fetching it again.
  const FetchLock lock((fs::path(options.cache_dir) / ".fetch.lock").string());
  if (const std::string path = cached_copy(url, options); !path.empty()) return path;
  const std::string path = cache_path(url, options);
  remove_stale_parts(options.cache_dir, "");
  fetch_shard(url, path, options);
  evict_to_limit(options, path);
  return path;
}

void remove_stale_private_copies(const std::string& folder) {
  // A whole private copy is unlinked once open: one still there was left by a killed process.
  remove_stale_parts(folder, "runner-shard-", /*whole_too=*/true);
}

void check_answers(const std::string& url, const FetchOptions& options) {
  if (url.rfind("pipe:", 0) == 0) {
    with_retries(url, options, [&] { return probe_pipe(url.substr(5)); });
    return;
  }
  with_retries(url, options, [&] { return probe_http(url, options); });
}

std::string fetch_text(const std::string& url_or_path, const FetchOptions& options) {
  std::string path = url_or_path;
  std::string fetched;
  if (is_remote_url(url_or_path)) {
    fetched = (fs::temp_directory_path() /
               ("runner-index-" + std::to_string(::getpid()) + "-" + readable_tail(url_or_path)))
                  .string();
    fetch_shard(url_or_path, fetched, options);
    path = fetched;
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  std::error_code ec;
  if (!fetched.empty()) fs::remove(fetched, ec);
  if (!in) throw ConfigError(url_or_path + ": cannot read it");
  return text.str();
}

}  // namespace runner::data
