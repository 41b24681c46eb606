#include <mutex>

#include "config/embedded_schemas.hpp"
#include "runner/error.hpp"

namespace runner::config {

const nlohmann::json& embedded_schema(const std::string& file_name) {
  static std::mutex mutex;
  static std::map<std::string, nlohmann::json> parsed;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = parsed.find(file_name);
  if (it != parsed.end()) return it->second;
  const auto& all = embedded_schemas();
  auto text = all.find(file_name);
  if (text == all.end()) throw Error("internal: schema '" + file_name + "' is not compiled in");
  return parsed.emplace(file_name, nlohmann::json::parse(text->second)).first->second;
}

}  // namespace runner::config
