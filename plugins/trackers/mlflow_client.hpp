#pragma once
// MLflow's tracking server over its REST API (api/2.0/mlflow/..., and the artifact proxy
// api/2.0/mlflow-artifacts/... of `mlflow server --serve-artifacts`), with MLflow's own
// environment variables for the server and its credentials.

#include <optional>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "trackers/http_client.hpp"

namespace runner::trackers {

/// A request the server did not take: `retryable` when it may go through later (no answer,
/// 5xx, 429), else the server's verdict (4xx: its error_code and message).
class MlflowError : public std::runtime_error {
 public:
  MlflowError(const std::string& what, bool retryable, long status = 0, std::string code = "")
      : std::runtime_error(what), retryable_(retryable), status_(status), code_(std::move(code)) {}
  bool retryable() const { return retryable_; }
  long status() const { return status_; }
  const std::string& code() const { return code_; }  ///< "RESOURCE_DOES_NOT_EXIST", ...

 private:
  bool retryable_;
  long status_;
  std::string code_;
};

// MLflow's limits (mlflow/utils/validation.py): what one log-batch may carry, and how long a
// param or tag value may be.
constexpr size_t kMlflowMetricsPerBatch = 1000;
constexpr size_t kMlflowParamsPerBatch = 100;
constexpr size_t kMlflowTagsPerBatch = 100;
constexpr size_t kMlflowKeyLength = 250;
constexpr size_t kMlflowParamValueLength = 6000;
constexpr size_t kMlflowTagValueLength = 8000;

class MlflowClient {
 public:
  /// `tracking_uri` (else MLFLOW_TRACKING_URI): an http(s) URL; credentials from
  /// MLFLOW_TRACKING_TOKEN (bearer) or MLFLOW_TRACKING_USERNAME/PASSWORD (basic), TLS from
  /// MLFLOW_TRACKING_INSECURE_TLS and MLFLOW_TRACKING_SERVER_CERT_PATH. Throws runner::Error
  /// when there is no URI or it is not http(s).
  MlflowClient(const std::optional<std::string>& tracking_uri, double timeout_s);

  const std::string& uri() const { return uri_; }

  /// POST (or GET with `query` as the URL's query) to api/2.0/mlflow/`endpoint`; the answer's
  /// JSON. Throws MlflowError.
  nlohmann::json post(const std::string& endpoint, const nlohmann::json& body) const;
  nlohmann::json get(const std::string& endpoint,
                     const std::vector<std::pair<std::string, std::string>>& query) const;
  /// PUTs the file `path` as `artifact_path` under the run's artifact root `root` (the part of
  /// its mlflow-artifacts: URI after the scheme). Throws MlflowError.
  void upload(const std::string& root, const std::string& artifact_path,
              const std::string& path) const;

  /// The experiment named `name`: its id and lifecycle_stage ("active", "deleted"), or nullopt
  /// when the server has none of that name.
  std::optional<std::pair<std::string, std::string>> experiment_by_name(
      const std::string& name) const;

 private:
  nlohmann::json answer(const HttpResponse& response, const std::string& what) const;

  std::string uri_;
  HttpOptions http_;
};

/// `text` cut to `limit` bytes, marked "...[truncated]" when cut (on a UTF-8 boundary).
std::string truncated(const std::string& text, size_t limit);

/// The artifact proxy path of an artifact URI "mlflow-artifacts:/1/abc/artifacts" (or
/// "mlflow-artifacts://host:port/1/abc/artifacts"): "1/abc/artifacts"; nullopt for another
/// store (s3://, file:), which runner does not write to.
std::optional<std::string> proxied_artifact_root(const std::string& artifact_uri);

}  // namespace runner::trackers
