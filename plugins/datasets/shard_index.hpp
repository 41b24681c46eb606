#pragma once
// How many samples each shard holds, from where WebDataset users keep it, so an epoch's size is
// known without reading the shards (data.dataset.shard_index). Two formats:
// - a wids shard index (`{"__kind__": "wids-shard-index-v1", "shardlist": [{"url": ...,
//   "nsamples": N, "filesize": B}, ...]}`, what webdataset's `widsindex create` writes);
// - a map of shard names to counts (`{"train-000000.tar": 1000, ...}`, a sizes.json).
// A shard is found by its name, the last part of its URL or path, so one index serves the
// shards on a server, behind a pipe: command and in a local copy alike.

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace runner::data {

struct ShardCount {
  uint64_t samples = 0;
  std::optional<uint64_t> bytes;  ///< the shard's size, when the index says it
};

/// The index's counts by shard name, from `text` (the file's content; `where` names the file in
/// errors). Throws ConfigError naming `where` for text that is not one of the two formats.
std::map<std::string, ShardCount> parse_shard_index(const std::string& text,
                                                    const std::string& where);

}  // namespace runner::data
