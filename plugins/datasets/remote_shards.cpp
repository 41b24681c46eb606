#include "remote_shards.hpp"

#include <curl/curl.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

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
// names a .tar; only characters safe in a file name.
std::string readable_tail(const std::string& url) {
  std::string tail;
  if (url.rfind("pipe:", 0) == 0) {
    std::istringstream words(url.substr(5));
    for (std::string word; words >> word;)
      if (word.find(".tar") != std::string::npos) tail = word;
  } else {
    tail = url.substr(0, url.find_first_of("?#"));
  }
  tail = tail.substr(tail.find_last_of('/') == std::string::npos ? 0 : tail.find_last_of('/') + 1);
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

// One GET of `url` appended to `part` from the byte it already holds (HTTP Range).
Attempt fetch_http(const std::string& url, const std::string& part, const FetchOptions& o) {
  static const bool initialised = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
  (void)initialised;
  const uint64_t from = size_of(part);
  std::unique_ptr<FILE, int (*)(FILE*)> out(std::fopen(part.c_str(), "ab"), std::fclose);
  if (!out) return {false, false, "cannot write " + part + " in data.dataset.cache_dir"};
  std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
  std::unique_ptr<curl_slist, void (*)(curl_slist*)> headers(headers_from_environment(),
                                                             curl_slist_free_all);
  char error[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_NETRC, static_cast<long>(CURL_NETRC_OPTIONAL));
  curl_easy_setopt(curl.get(), CURLOPT_FAILONERROR, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, append_to_file);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, out.get());
  curl_easy_setopt(curl.get(), CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(o.connect_timeout_s * 1000));
  // A server that stops sending: under 1 byte/s for a minute is a dropped connection.
  curl_easy_setopt(curl.get(), CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_LOW_SPEED_TIME, 60L);
  curl_easy_setopt(curl.get(), CURLOPT_RESUME_FROM_LARGE, static_cast<curl_off_t>(from));
  curl_easy_setopt(curl.get(), CURLOPT_USERAGENT, "runner (webdataset shards)");
  if (headers) curl_easy_setopt(curl.get(), CURLOPT_HTTPHEADER, headers.get());
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

std::string cached_shard(const std::string& url, const FetchOptions& options) {
  const std::string path = cache_path(url, options);
  if (fs::is_regular_file(path)) return path;  // renamed there only when whole
  std::error_code ec;
  fs::create_directories(options.cache_dir, ec);
  if (ec)
    throw ConfigError("data.dataset.cache_dir " + options.cache_dir + ": cannot create it (" +
                      ec.message() + "); set it to a folder this user can write");
  // One fetch into the cache at a time (the ranks of a torchrun world, two runs on one cache):
  // the others wait, then find the shard there instead of fetching it again.
  const FetchLock lock((fs::path(options.cache_dir) / ".fetch.lock").string());
  if (fs::is_regular_file(path)) return path;
  // Our own partial file: ranks fetching one shard at once each write theirs, and rename the
  // same bytes to the same name.
  const std::string part = path + ".part-" + std::to_string(::getpid());
  const bool pipe = url.rfind("pipe:", 0) == 0;
  Attempt attempt;
  int tries = 0;
  for (; tries <= options.retries; ++tries) {
    if (tries > 0)
      std::this_thread::sleep_for(
          std::chrono::duration<double>(options.backoff_s * static_cast<double>(1 << (tries - 1))));
    attempt = pipe ? fetch_pipe(url.substr(5), part) : fetch_http(url, part, options);
    if (attempt.whole) {
      fs::rename(part, path, ec);
      if (ec) break;
      return path;
    }
    if (!attempt.worth_retrying) break;
  }
  fs::remove(part, ec);
  const int made = std::min(tries + 1, options.retries + 1);
  // The configuration names a place that does not answer: said before any rank starts, exit 2.
  throw ConfigError(url + ": " +
                    (attempt.whole ? "cannot keep it in data.dataset.cache_dir" : attempt.why) +
                    (made > 1 ? " (after " + std::to_string(made) + " tries)" : "") +
                    "; check the URL and that the server (or the command) answers, then run "
                    "again (data.dataset.retries sets the tries)");
}

}  // namespace runner::data
