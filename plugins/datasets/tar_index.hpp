#pragma once
// Where each file of an uncompressed tar archive lies, listed with libarchive (Debian's
// libarchive-dev) without reading the files' bytes: a sample of a WebDataset shard is then one
// pread of its image at a known offset, from any thread, in any order.

#include <cstdint>
#include <string>
#include <vector>

namespace runner::data {

struct TarMember {
  std::string name;     ///< the path inside the archive ("./" dropped)
  uint64_t offset = 0;  ///< of its first byte in the archive file
  uint64_t size = 0;
};

/// The regular files of the tar archive at `path`, in archive order. Throws runner::DataError
/// naming the file for one that is missing, not a tar archive, compressed (gzip, zstd, ...: the
/// offsets must be the file's) or truncated.
std::vector<TarMember> list_tar(const std::string& path);

/// `size` bytes at `offset` of the file at `path`. Throws runner::DataError naming the file when
/// it cannot be read that far (changed or truncated since it was listed).
std::string read_bytes(const std::string& path, uint64_t offset, uint64_t size);

/// `size` bytes at `offset` of the open file `fd`, from any thread; errors name `name`.
std::string read_at(int fd, const std::string& name, uint64_t offset, uint64_t size);

}  // namespace runner::data
