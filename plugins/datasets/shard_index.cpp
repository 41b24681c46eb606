#include "shard_index.hpp"

#include <nlohmann/json.hpp>

#include "remote_shards.hpp"
#include "runner/error.hpp"

namespace runner::data {

std::map<std::string, ShardCount> parse_shard_index(const std::string& text,
                                                    const std::string& where) {
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  const std::string fix =
      "; data.dataset.shard_index takes a wids shard index ({\"shardlist\": [{\"url\": ..., "
      "\"nsamples\": N}]}) or a map of shard names to sample counts";
  if (!doc.is_object()) throw ConfigError(where + ": not a JSON object" + fix);
  std::map<std::string, ShardCount> counts;
  if (doc.contains("shardlist")) {
    const nlohmann::json& list = doc.at("shardlist");
    if (!list.is_array()) throw ConfigError(where + ": its shardlist is not a list" + fix);
    for (size_t i = 0; i < list.size(); ++i) {
      const nlohmann::json& shard = list[i];
      const std::string at = where + ": shardlist[" + std::to_string(i) + "]";
      if (!shard.is_object() || !shard.contains("url") || !shard.at("url").is_string() ||
          !shard.contains("nsamples") || !shard.at("nsamples").is_number_unsigned())
        throw ConfigError(at + " has no url and whole nsamples" + fix);
      ShardCount count{shard.at("nsamples").get<uint64_t>(), std::nullopt};
      if (shard.contains("filesize") && shard.at("filesize").is_number_unsigned())
        count.bytes = shard.at("filesize").get<uint64_t>();
      counts[shard_name(shard.at("url").get<std::string>())] = count;
    }
    return counts;
  }
  for (const auto& [name, value] : doc.items()) {
    if (!value.is_number_unsigned())
      throw ConfigError(where + ": '" + name + "' is not a sample count" + fix);
    counts[shard_name(name)] = ShardCount{value.get<uint64_t>(), std::nullopt};
  }
  return counts;
}

}  // namespace runner::data
