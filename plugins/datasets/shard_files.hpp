#pragma once
// Where each shard of a webdataset split is read from: a local shard is its file; a remote one
// (http, https, pipe:) is fetched whole when the run first reads it (remote_shards.hpp), into
// data.dataset.cache_dir when there is one, else into a private file unlinked as soon as it is
// open (nothing left behind, each epoch streams again). A shard stays open while it is read; at
// most kKeepOpen are, the least recently read closed first (a private copy's bytes go then, a
// cached one stays for the next epoch unless the cache's limit evicts it).

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "remote_shards.hpp"

namespace runner::data {

/// One shard's file, open for reads from any thread (pread).
class OpenShard {
 public:
  /// `path` opened; `source` (its URL or path) names it in errors.
  OpenShard(const std::string& path, std::string source);
  ~OpenShard();
  OpenShard(const OpenShard&) = delete;
  OpenShard& operator=(const OpenShard&) = delete;
  /// `size` bytes at `offset`. Throws DataError naming the source.
  std::string read(uint64_t offset, uint64_t size) const;

 private:
  int fd_;
  std::string source_;
};

class ShardFiles {
 public:
  static constexpr size_t kKeepOpen = 8;
  /// Called with a shard's number and its local path once, before anything reads it (the
  /// dataset's index of its samples).
  using FirstOpen = std::function<void(size_t shard, const std::string& path)>;

  /// `sources`: each shard's path or URL; `listed[k]`: whether shard k's samples are known
  /// already (first_open is not called for it).
  ShardFiles(std::vector<std::string> sources, std::vector<bool> listed, FetchOptions fetch,
             FirstOpen first_open);

  /// Shard `k`, open: fetched first when it is remote and not at hand. Throws StorageError for
  /// a remote shard that cannot be fetched (after its retries), DataError for a bad one.
  std::shared_ptr<const OpenShard> open(size_t k) const;
  const std::string& source(size_t k) const { return sources_.at(k); }

 private:
  struct Slot {
    std::mutex mutex;
    std::shared_ptr<const OpenShard> open;
    bool listed = false;
  };
  std::shared_ptr<const OpenShard> open_from_source(size_t k, Slot& slot) const;
  void close_least_recent(size_t opened) const;

  std::vector<std::string> sources_;
  FetchOptions fetch_;
  FirstOpen first_open_;
  std::vector<std::unique_ptr<Slot>> slots_;
  mutable std::mutex recency_mutex_;
  mutable std::vector<size_t> recent_;  ///< the open shards, the most recently read last
};

}  // namespace runner::data
