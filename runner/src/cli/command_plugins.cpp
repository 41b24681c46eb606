#include <iostream>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "cli/command_line.hpp"
#include "cli/commands.hpp"
#include "runner/error.hpp"
#include "runner/registries.hpp"
#include "runner/suggest.hpp"

namespace runner::cli {
namespace {

using nlohmann::json;

std::string type_text(const json& s) {
  if (s.contains("enum")) {
    std::string out;
    for (const auto& e : s.at("enum"))
      out += (out.empty() ? "" : "|") + (e.is_string() ? e.get<std::string>() : e.dump());
    return out;
  }
  if (s.contains("oneOf")) {
    std::string out;
    for (const auto& alt : s.at("oneOf")) out += (out.empty() ? "" : "|") + type_text(alt);
    return out;
  }
  if (s.contains("const")) return s.at("const").dump();
  if (!s.contains("type")) return "any";
  if (s.at("type").is_string()) return s.at("type").get<std::string>();
  std::string out;
  for (const auto& t : s.at("type")) out += (out.empty() ? "" : "|") + t.get<std::string>();
  return out;
}

void print_parameter(const std::string& name, const json& p) {
  std::cout << "      " << name << ": " << type_text(p);
  if (p.contains("default")) std::cout << " = " << p.at("default").dump();
  if (p.contains("description")) std::cout << "  " << p.at("description").get<std::string>();
  std::cout << "\n";
}

// A parameter that three or more plugins of a kind take with the same schema (the models'
// in_chans, num_classes, pretrained, ...) is printed once, above them; each of those plugins
// names it on a "+ shared:" line.
constexpr size_t kSharedAtLeast = 3;

template <class Factory>
void print_kind(const Registry<Factory>& r, bool verbose) {
  std::cout << r.kind() << ":\n";
  std::map<std::pair<std::string, std::string>, size_t> uses;  // (name, schema text) -> plugins
  for (const auto& [name, entry] : r.entries())
    if (entry.schema.contains("properties"))
      for (const auto& [key, p] : entry.schema.at("properties").items()) ++uses[{key, p.dump()}];
  auto shared = [&](const std::string& key, const json& p) {
    return uses[{key, p.dump()}] >= kSharedAtLeast;
  };
  if (verbose) {
    bool any = false;
    std::set<std::string> printed;
    for (const auto& [name, entry] : r.entries()) {
      if (!entry.schema.contains("properties")) continue;
      for (const auto& [key, p] : entry.schema.at("properties").items()) {
        if (!shared(key, p) || !printed.insert(key + p.dump()).second) continue;
        if (!any) std::cout << "  (parameters several " << r.kind() << " take: see + shared)\n";
        any = true;
        print_parameter(key, p);
      }
    }
  }
  for (const auto& [name, entry] : r.entries()) {
    std::cout << "  " << name << std::string(name.size() < 22 ? 22 - name.size() : 1, ' ')
              << entry.help << "\n";
    if (!verbose || !entry.schema.contains("properties")) continue;
    std::string shared_names;
    for (const auto& [key, p] : entry.schema.at("properties").items()) {
      if (shared(key, p))
        shared_names += (shared_names.empty() ? "" : ", ") + key;
      else
        print_parameter(key, p);
    }
    if (!shared_names.empty()) std::cout << "      + shared: " << shared_names << "\n";
  }
}

template <class Factory>
json kind_json(const Registry<Factory>& r) {
  json out = json::object();
  for (const auto& [name, entry] : r.entries())
    out[name] = {{"help", entry.help}, {"schema", entry.schema}};
  return out;
}

}  // namespace

int command_plugins(const Args& args) {
  CommandLine cl(
      "plugins", "[KIND] [--json] [--brief]",
      "Lists every registered plugin by kind (datasets, transforms, models, optimizers,\n"
      "schedulers, losses, metrics, trackers) with its parameters, types, defaults and meaning.");
  cl.flag("json", nullptr, "Print JSON (name -> help and parameter schema) for tools")
      .flag("brief", nullptr, "Names and help only")
      .positional("kind", 1);
  if (!cl.parse(args)) return 0;
  const Registries& r = registries();
  const auto kinds = cl.list("kind");
  const std::string only = kinds.empty() ? "" : kinds[0];
  const std::vector<std::string> all = {"datasets",   "transforms", "models",  "optimizers",
                                        "schedulers", "losses",     "metrics", "trackers"};
  if (!only.empty() && std::find(all.begin(), all.end(), only) == all.end()) {
    throw ConfigError(
        "runner plugins: unknown kind '" + only + "'" + did_you_mean(only, all) +
        "; kinds: datasets, transforms, models, optimizers, schedulers, losses, metrics, trackers");
  }
  const bool verbose = !cl.has("brief");
  json out = json::object();
  auto visit = [&](const auto& registry) {
    if (!only.empty() && registry.kind() != only) return;
    if (cl.has("json"))
      out[registry.kind()] = kind_json(registry);
    else
      print_kind(registry, verbose);
  };
  visit(r.datasets);
  visit(r.transforms);
  visit(r.models);
  visit(r.optimizers);
  visit(r.schedulers);
  visit(r.losses);
  visit(r.metrics);
  visit(r.trackers);
  if (cl.has("json")) std::cout << (only.empty() ? out : out[only]).dump(2) << "\n";
  return 0;
}

}  // namespace runner::cli
