#pragma once
// Test helper: a plugin's parameters as the core hands them to its factory (the user's keys
// plus the schema's defaults for the rest).

#include <nlohmann/json.hpp>

namespace runner::test {

/// `user` with every top-level schema default filled in for keys it lacks.
inline nlohmann::json with_defaults(const nlohmann::json& schema,
                                    nlohmann::json user = nlohmann::json::object()) {
  for (auto it = schema.at("properties").begin(); it != schema.at("properties").end(); ++it)
    if (!user.contains(it.key()) && it.value().contains("default"))
      user[it.key()] = it.value().at("default");
  return user;
}

}  // namespace runner::test
