#pragma once
// One registry per plugin kind: name -> factory, parameter JSON Schema and one-line help.

#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "runner/error.hpp"
#include "runner/suggest.hpp"

namespace runner {

template <class Factory>
class Registry {
 public:
  struct Entry {
    std::string name;
    Factory factory;
    nlohmann::json schema;  ///< JSON Schema (draft-07) of the plugin's parameters
    std::string help;       ///< one line for `runner plugins`
  };

  /// `kind` is the plural noun users see: "datasets", "models", ...
  explicit Registry(std::string kind) : kind_(std::move(kind)) {}

  /// Registers `name`. Requires a name not yet registered (else throws Error).
  void add(const std::string& name, Factory factory, nlohmann::json schema, std::string help) {
    if (entries_.count(name) != 0) {
      throw Error("plugin '" + name + "' is registered twice in " + kind_ +
                  ": rename one of them or load the plugin library only once");
    }
    entries_.emplace(name, Entry{name, std::move(factory), std::move(schema), std::move(help)});
  }

  /// The entry for `name`, or nullptr. A name registered as "family/*" stands for every
  /// "family/<anything>" not registered by its full name (e.g. timm/* for timm/efficientnet_b0).
  const Entry* find(const std::string& name) const {
    auto it = entries_.find(name);
    if (it != entries_.end()) return &it->second;
    const auto slash = name.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == name.size()) return nullptr;
    it = entries_.find(name.substr(0, slash + 1) + "*");
    return it == entries_.end() ? nullptr : &it->second;
  }

  /// The entry for `name`; an unknown name throws ConfigError listing close matches.
  const Entry& at(const std::string& name) const {
    if (const Entry* e = find(name)) return *e;
    throw ConfigError(unknown_message(name));
  }

  /// "unknown backbone 'x' (did you mean 'y'? see 'runner plugins models')"
  std::string unknown_message(const std::string& name, const std::string& noun = "") const {
    std::string suggestion = did_you_mean(name, names());
    if (!suggestion.empty())
      suggestion.pop_back();  // drop ')' to append the pointer
    else
      suggestion = " (";
    if (suggestion != " (") suggestion += "; ";
    return "unknown " + (noun.empty() ? singular() : noun) + " '" + name + "'" + suggestion +
           "see 'runner plugins " + kind_ + "')";
  }

  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& kv : entries_) out.push_back(kv.first);
    return out;
  }
  const std::map<std::string, Entry>& entries() const { return entries_; }
  const std::string& kind() const { return kind_; }
  /// "datasets" -> "dataset"
  std::string singular() const {
    if (kind_.size() > 3 && kind_.compare(kind_.size() - 3, 3, "ses") == 0)  // losses
      return kind_.substr(0, kind_.size() - 2);
    return !kind_.empty() && kind_.back() == 's' ? kind_.substr(0, kind_.size() - 1) : kind_;
  }

 private:
  std::string kind_;
  std::map<std::string, Entry> entries_;
};

}  // namespace runner
