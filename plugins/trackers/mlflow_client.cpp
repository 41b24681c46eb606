#include "trackers/mlflow_client.hpp"

#include <cstdlib>

#include "runner/error.hpp"

namespace runner::trackers {

using nlohmann::json;

namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

std::string base64(const std::string& in) {
  static const char* table = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(in[i]) << 16) |
                       (static_cast<unsigned char>(in[i + 1]) << 8) |
                       static_cast<unsigned char>(in[i + 2]);
    out += {table[v >> 18], table[(v >> 12) & 63], table[(v >> 6) & 63], table[v & 63]};
  }
  if (i + 1 == in.size()) {
    const unsigned v = static_cast<unsigned char>(in[i]) << 16;
    out += {table[v >> 18], table[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == in.size()) {
    const unsigned v =
        (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8);
    out += {table[v >> 18], table[(v >> 12) & 63], table[(v >> 6) & 63], '='};
  }
  return out;
}

}  // namespace

MlflowClient::MlflowClient(const std::optional<std::string>& tracking_uri, double timeout_s) {
  uri_ = tracking_uri.value_or(env("MLFLOW_TRACKING_URI"));
  if (uri_.empty())
    throw Error(
        "no MLflow server: set tracking_uri (e.g. http://mlflow.example:5000) or the "
        "environment variable MLFLOW_TRACKING_URI");
  if (uri_.rfind("http://", 0) != 0 && uri_.rfind("https://", 0) != 0)
    throw Error("tracking_uri '" + uri_ +
                "' is not an http(s) URL: runner talks to an MLflow tracking server (`mlflow "
                "server --host HOST --port PORT`), not to a local folder or database");
  while (!uri_.empty() && uri_.back() == '/') uri_.pop_back();
  http_.timeout_s = timeout_s;
  if (!env("MLFLOW_TRACKING_TOKEN").empty()) {
    http_.headers["Authorization"] = "Bearer " + env("MLFLOW_TRACKING_TOKEN");
  } else if (!env("MLFLOW_TRACKING_USERNAME").empty()) {
    http_.headers["Authorization"] =
        "Basic " + base64(env("MLFLOW_TRACKING_USERNAME") + ":" + env("MLFLOW_TRACKING_PASSWORD"));
  }
  const std::string insecure = env("MLFLOW_TRACKING_INSECURE_TLS");
  http_.verify_tls = !(insecure == "true" || insecure == "1" || insecure == "True");
  http_.ca_file = env("MLFLOW_TRACKING_SERVER_CERT_PATH");
}

json MlflowClient::answer(const HttpResponse& response, const std::string& what) const {
  if (!response.answered())
    throw MlflowError(uri_ + " did not answer " + what + ": " + response.error, true);
  const json body = json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  if (response.status >= 200 && response.status < 300)
    return body.is_discarded() ? json::object() : body;
  std::string code, message;
  if (body.is_object()) {
    code = body.value("error_code", "");
    message = body.value("message", "");
  }
  if (message.empty()) message = response.body.substr(0, 200);
  const bool retryable = response.status >= 500 || response.status == 429;
  std::string text = uri_ + " refused " + what + " (HTTP " + std::to_string(response.status) +
                     (code.empty() ? "" : " " + code) + "): " + message;
  if (response.status == 401 || response.status == 403)
    text +=
        " (set MLFLOW_TRACKING_TOKEN, or MLFLOW_TRACKING_USERNAME and "
        "MLFLOW_TRACKING_PASSWORD, to credentials the server takes)";
  throw MlflowError(text, retryable, response.status, code);
}

json MlflowClient::post(const std::string& endpoint, const json& body) const {
  return answer(http_request("POST", uri_ + "/api/2.0/mlflow/" + endpoint, body.dump(), http_),
                endpoint);
}

json MlflowClient::get(const std::string& endpoint,
                       const std::vector<std::pair<std::string, std::string>>& query) const {
  std::string url = uri_ + "/api/2.0/mlflow/" + endpoint;
  for (size_t i = 0; i < query.size(); ++i)
    url += (i ? "&" : "?") + url_escape(query[i].first) + "=" + url_escape(query[i].second);
  return answer(http_request("GET", url, "", http_), endpoint);
}

void MlflowClient::upload(const std::string& root, const std::string& artifact_path,
                          const std::string& path) const {
  const std::string url = uri_ + "/api/2.0/mlflow-artifacts/artifacts/" + url_escape(root, true) +
                          "/" + url_escape(artifact_path, true);
  answer(http_upload(url, path, http_), "the artifact " + artifact_path);
}

std::optional<std::pair<std::string, std::string>> MlflowClient::experiment_by_name(
    const std::string& name) const {
  try {
    const json found = get("experiments/get-by-name", {{"experiment_name", name}});
    const json& experiment = found.at("experiment");
    return std::make_pair(experiment.at("experiment_id").get<std::string>(),
                          experiment.value("lifecycle_stage", "active"));
  } catch (const MlflowError& e) {
    if (e.code() == "RESOURCE_DOES_NOT_EXIST") return std::nullopt;
    throw;
  }
}

std::string truncated(const std::string& text, size_t limit) {
  if (text.size() <= limit) return text;
  static const std::string mark = "...[truncated]";
  size_t cut = limit - mark.size();
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut) + mark;
}

std::optional<std::string> proxied_artifact_root(const std::string& artifact_uri) {
  const std::string scheme = "mlflow-artifacts:";
  if (artifact_uri.rfind(scheme, 0) != 0) return std::nullopt;
  std::string rest = artifact_uri.substr(scheme.size());
  if (rest.rfind("//", 0) == 0) {  // mlflow-artifacts://host:port/path
    const auto slash = rest.find('/', 2);
    rest = slash == std::string::npos ? "" : rest.substr(slash);
  }
  while (!rest.empty() && rest.front() == '/') rest.erase(0, 1);
  return rest;
}

}  // namespace runner::trackers
