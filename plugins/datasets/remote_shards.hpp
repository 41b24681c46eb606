#pragma once
// Shards where people keep them: `http://`, `https://` and `pipe:CMD` URLs of a webdataset split
// (WebDataset's own URL forms). A remote shard is fetched whole, front to back, into
// data.dataset.cache_dir (WebDataset's cache_dir): written under a temporary name, renamed when
// whole (an http shard checked against the size the server said), then read as a local shard;
// later epochs and later runs read the cached copy. A dropped connection is retried with
// backoff, continuing at the byte where it stopped (HTTP Range); a pipe command starts again.
// http(s) through libcurl: redirects, TLS, ~/.netrc, and extra request headers from the
// environment variable RUNNER_HTTP_HEADERS ("Name: value" lines, for private buckets).

#include <string>

namespace runner::data {

/// Whether `url` names a remote shard (http://, https://, pipe:) rather than a file.
bool is_remote_url(const std::string& url);

struct FetchOptions {
  std::string cache_dir;   ///< where fetched shards are kept (created when missing)
  int retries = 3;         ///< tries after the first, each after a doubling pause
  double backoff_s = 1.0;  ///< the first pause
  double connect_timeout_s = 30;
};

/// The file in `options.cache_dir` that holds `url`'s shard: "<16 hex of the URL's hash>-<the
/// URL's last path part>", so two URLs never share one and a person still sees which shard it is.
std::string cache_path(const std::string& url, const FetchOptions& options);

/// The cached copy of `url`'s shard, fetched first when the cache lacks it. Throws ConfigError
/// (exit 2: the configuration names a place that does not answer) in one line naming the URL
/// and why: the HTTP status (404, 403: not retried), curl's reason and
/// the byte it stopped at after the last try, a pipe command's exit status and the last line of
/// its stderr.
std::string cached_shard(const std::string& url, const FetchOptions& options);

}  // namespace runner::data
