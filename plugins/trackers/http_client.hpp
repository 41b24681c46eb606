#pragma once
// HTTP requests over libcurl for the trackers that talk to a server (MLflow's REST API): JSON
// bodies, file uploads, a timeout per request, the proxy and TLS settings of the environment.

#include <map>
#include <string>

namespace runner::trackers {

struct HttpResponse {
  long status = 0;  ///< the HTTP status; 0 when no answer came (then `error` says why)
  std::string body;
  std::string error;  ///< curl's reason when the request got no answer ("Connection refused")
  bool answered() const { return status != 0; }
};

struct HttpOptions {
  double timeout_s = 10;
  std::map<std::string, std::string> headers;  ///< "Authorization" -> "Bearer ..."
  bool verify_tls = true;
  std::string ca_file;  ///< a CA bundle for the server's certificate ("" = the system's)
};

/// Sends `method` (GET, POST, PATCH, DELETE) to `url` with `body` (JSON when not empty).
/// Never throws for a failed request: the response says what happened.
HttpResponse http_request(const std::string& method, const std::string& url,
                          const std::string& body, const HttpOptions& options);

/// PUTs the file at `path` to `url`, streamed from the disk.
HttpResponse http_upload(const std::string& url, const std::string& path,
                         const HttpOptions& options);

/// `text` escaped for a URL's query or path segment ('/' kept when `keep_slash`).
std::string url_escape(const std::string& text, bool keep_slash = false);

}  // namespace runner::trackers
