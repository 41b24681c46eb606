#include "trackers/http_client.hpp"

#include <curl/curl.h>

#include <cstdio>
#include <memory>
#include <mutex>

namespace runner::trackers {
namespace {

void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

size_t append_to_string(char* data, size_t size, size_t count, void* out) {
  static_cast<std::string*>(out)->append(data, size * count);
  return size * count;
}

// One easy handle per request: requests are few (one per log window), and a handle shared
// between the run's thread and a tracker's sender thread would need a lock anyway.
HttpResponse perform(CURL* curl, const std::string& url, const HttpOptions& options,
                     curl_slist* headers) {
  HttpResponse response;
  char error[CURL_ERROR_SIZE] = {};
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);  // no SIGALRM in a threaded process
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(options.timeout_s * 1000));
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(std::min(options.timeout_s, 5.0) * 1000));
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, append_to_string);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &response.body);
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
  if (!options.verify_tls) {
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if (!options.ca_file.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, options.ca_file.c_str());
  for (const auto& [name, value] : options.headers)
    headers = curl_slist_append(headers, (name + ": " + value).c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  const CURLcode code = curl_easy_perform(curl);
  if (code == CURLE_OK) {
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
  } else {
    response.error = error[0] ? error : curl_easy_strerror(code);
  }
  curl_slist_free_all(headers);
  return response;
}

using CurlHandle = std::unique_ptr<CURL, decltype(&curl_easy_cleanup)>;

CurlHandle new_handle() {
  init_curl_once();
  return CurlHandle(curl_easy_init(), &curl_easy_cleanup);
}

}  // namespace

HttpResponse http_request(const std::string& method, const std::string& url,
                          const std::string& body, const HttpOptions& options) {
  CurlHandle curl = new_handle();
  if (!curl) return {0, "", "libcurl could not start a request"};
  curl_slist* headers = nullptr;
  if (method != "GET") {
    curl_easy_setopt(curl.get(), CURLOPT_CUSTOMREQUEST, method.c_str());
    curl_easy_setopt(curl.get(), CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(curl.get(), CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    headers = curl_slist_append(headers, "Content-Type: application/json");
  }
  return perform(curl.get(), url, options, headers);
}

HttpResponse http_upload(const std::string& url, const std::string& path,
                         const HttpOptions& options) {
  std::unique_ptr<FILE, decltype(&fclose)> file(std::fopen(path.c_str(), "rb"), &fclose);
  if (!file) return {0, "", "cannot read " + path};
  std::fseek(file.get(), 0, SEEK_END);
  const long size = std::ftell(file.get());
  std::fseek(file.get(), 0, SEEK_SET);
  CurlHandle curl = new_handle();
  if (!curl) return {0, "", "libcurl could not start a request"};
  curl_easy_setopt(curl.get(), CURLOPT_UPLOAD, 1L);  // a PUT of the file's bytes
  curl_easy_setopt(curl.get(), CURLOPT_READDATA, file.get());
  curl_easy_setopt(curl.get(), CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(size));
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/octet-stream");
  headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip
  HttpOptions upload = options;
  upload.timeout_s = std::max(options.timeout_s, 60.0 + static_cast<double>(size) / 20e6);
  return perform(curl.get(), url, upload, headers);
}

std::string url_escape(const std::string& text, bool keep_slash) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (const unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' ||
        (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

}  // namespace runner::trackers
