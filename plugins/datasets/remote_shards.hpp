#pragma once
// Shards where people keep them: `http://`, `https://` and `pipe:CMD` URLs of a webdataset split
// (WebDataset's own URL forms). A remote shard is fetched whole, front to back, when a run
// first reads it: into data.dataset.cache_dir (WebDataset's cache_dir) when there is one,
// written under a temporary name and renamed when whole (an http shard checked against the size
// the server said), where later epochs and later runs find it; else into a private file that
// goes when the shard is closed (each epoch streams again). A dropped connection is retried
// with backoff, continuing at the byte where it stopped (HTTP Range); a pipe command starts
// again.
// http(s) through libcurl: redirects, TLS, ~/.netrc, and extra request headers from the
// environment variable RUNNER_HTTP_HEADERS ("Name: value" lines, for private buckets).

#include <string>

namespace runner::data {

/// Whether `url` names a remote shard (http://, https://, pipe:) rather than a file.
bool is_remote_url(const std::string& url);

struct FetchOptions {
  std::string cache_dir;     ///< where fetched shards are kept (created when missing); "": none
  uint64_t cache_bytes = 0;  ///< the cache's size limit (0: none): least recently used shards leave
  int retries = 3;           ///< tries after the first, each after a doubling pause
  double backoff_s = 1.0;    ///< the first pause
  double connect_timeout_s = 30;
};

/// The file in `options.cache_dir` that holds `url`'s shard: "<16 hex of the URL's hash>-<the
/// URL's last path part>", so two URLs never share one and a person still sees which shard it is.
std::string cache_path(const std::string& url, const FetchOptions& options);

/// The URL's last path part ("train-000003.tar"; a pipe command's last word naming a .tar), the
/// name a shard index (shard_index.hpp) lists the shard under.
std::string shard_name(const std::string& url);

/// `url`'s shard in the cache when it is there (marked as used: the size limit evicts the least
/// recently used), else "". Fetches nothing.
std::string cached_copy(const std::string& url, const FetchOptions& options);

/// The cached copy of `url`'s shard, fetched first when the cache lacks it (then the least
/// recently used others leave while the cache is over options.cache_bytes). Throws StorageError
/// (exit 2 before a run: the configuration names a place that does not answer) in one line
/// naming the URL and why: the HTTP status (404, 403: not retried), curl's reason and the byte
/// it stopped at after the last try, a pipe command's exit status and the last line of its
/// stderr.
std::string cached_shard(const std::string& url, const FetchOptions& options);

/// `url`'s shard fetched whole into the file `target` (through `target`.part-..., renamed when
/// whole), with the retries of cached_shard and its errors.
void fetch_shard(const std::string& url, const std::string& target, const FetchOptions& options);

/// Removes the private copies (runner-shard-*, whole or partial) in `folder` that nothing has
/// written for 10 minutes: left by a process killed mid-fetch (a whole one is unlinked as soon
/// as it is open).
void remove_stale_private_copies(const std::string& folder);

/// Whether `url` answers, reading none of it: an http(s) HEAD (its retries as a fetch's), for a
/// pipe: command that its program is there to start. Throws StorageError as cached_shard does.
void check_answers(const std::string& url, const FetchOptions& options);

/// A small file (a shard index) at a path or an http(s) URL, whole. Throws StorageError.
std::string fetch_text(const std::string& url_or_path, const FetchOptions& options);

}  // namespace runner::data
