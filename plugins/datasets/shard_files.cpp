#include "shard_files.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>

#include "runner/error.hpp"
#include "tar_index.hpp"

namespace runner::data {

namespace fs = std::filesystem;

OpenShard::OpenShard(const std::string& path, std::string source)
    : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)), source_(std::move(source)) {
  if (fd_ < 0) throw DataError(source_ + ": cannot open the shard (" + std::strerror(errno) + ")");
}

OpenShard::~OpenShard() { ::close(fd_); }

std::string OpenShard::read(uint64_t offset, uint64_t size) const {
  return read_at(fd_, source_, offset, size);
}

ShardFiles::ShardFiles(std::vector<std::string> sources, std::vector<bool> listed,
                       FetchOptions fetch, FirstOpen first_open)
    : sources_(std::move(sources)), fetch_(std::move(fetch)), first_open_(std::move(first_open)) {
  for (size_t k = 0; k < sources_.size(); ++k) {
    slots_.push_back(std::make_unique<Slot>());
    slots_.back()->listed = k < listed.size() && listed[k];
  }
}

std::shared_ptr<const OpenShard> ShardFiles::open(size_t k) const {
  Slot& slot = *slots_.at(k);
  std::shared_ptr<const OpenShard> shard;
  bool opened = false;
  {
    const std::lock_guard<std::mutex> lock(slot.mutex);
    if (!slot.open) {
      slot.open = open_from_source(k, slot);
      opened = true;
    }
    shard = slot.open;
  }
  {
    const std::lock_guard<std::mutex> lock(recency_mutex_);
    const auto it = std::find(recent_.begin(), recent_.end(), k);
    if (it != recent_.end()) recent_.erase(it);
    recent_.push_back(k);
  }
  if (opened) close_least_recent(k);
  return shard;
}

std::shared_ptr<const OpenShard> ShardFiles::open_from_source(size_t k, Slot& slot) const {
  const std::string& source = sources_[k];
  const auto listed = [&](const std::string& path) {
    if (!slot.listed) first_open_(k, path);
    slot.listed = true;
  };
  if (!is_remote_url(source) || !fetch_.cache_dir.empty()) {
    const std::string path = is_remote_url(source) ? cached_shard(source, fetch_) : source;
    listed(path);
    return std::make_shared<const OpenShard>(path, source);
  }
  // No cache: a private copy, unlinked once open (its bytes go when the shard is closed).
  static std::atomic<uint64_t> copies{0};
  const fs::path folder = fs::temp_directory_path();
  if (copies == 0) remove_stale_private_copies(folder.string());  // once a process
  const std::string path = (folder / ("runner-shard-" + std::to_string(::getpid()) + "-" +
                                      std::to_string(copies++) + ".tar"))
                               .string();
  fetch_shard(source, path, fetch_);
  std::error_code ec;
  try {
    listed(path);
    auto shard = std::make_shared<const OpenShard>(path, source);
    fs::remove(path, ec);
    return shard;
  } catch (...) {
    fs::remove(path, ec);
    throw;
  }
}

void ShardFiles::close_least_recent(size_t opened) const {
  std::vector<size_t> closing;
  {
    const std::lock_guard<std::mutex> lock(recency_mutex_);
    while (recent_.size() > kKeepOpen && recent_.front() != opened) {
      closing.push_back(recent_.front());
      recent_.erase(recent_.begin());
    }
  }
  // Readers holding the shard read on: its file closes with their last reference.
  for (const size_t k : closing) {
    const std::lock_guard<std::mutex> lock(slots_[k]->mutex);
    {
      const std::lock_guard<std::mutex> recency(recency_mutex_);
      if (std::find(recent_.begin(), recent_.end(), k) != recent_.end()) continue;  // read again
    }
    slots_[k]->open.reset();
  }
}

}  // namespace runner::data
