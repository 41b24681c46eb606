#include "tar_index.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "runner/error.hpp"

namespace runner::data {

std::vector<TarMember> list_tar(const std::string& path) {
  std::unique_ptr<archive, int (*)(archive*)> reader(archive_read_new(), archive_read_free);
  archive_read_support_format_tar(reader.get());
  archive_read_support_filter_all(reader.get());  // to say "compressed" rather than "not a tar"
  if (archive_read_open_filename(reader.get(), path.c_str(), 1 << 16) != ARCHIVE_OK)
    throw DataError(path + ": cannot open the shard (" +
                    std::string(archive_error_string(reader.get())) + ")");
  std::vector<TarMember> members;
  archive_entry* entry = nullptr;
  int status = ARCHIVE_OK;
  while ((status = archive_read_next_header(reader.get(), &entry)) == ARCHIVE_OK ||
         status == ARCHIVE_WARN) {
    if (archive_filter_count(reader.get()) > 1)
      throw DataError(path + ": the shard is compressed (" +
                      std::string(archive_filter_name(reader.get(), 0)) +
                      "); webdataset reads uncompressed .tar shards (decompress it: JPEG and PNG "
                      "gain nothing from it)");
    if (archive_entry_filetype(entry) != AE_IFREG) continue;
    std::string name = archive_entry_pathname(entry);
    if (name.rfind("./", 0) == 0) name.erase(0, 2);
    // The format reader has consumed the headers: its position is the file's first byte.
    members.push_back({name, static_cast<uint64_t>(archive_filter_bytes(reader.get(), 0)),
                       static_cast<uint64_t>(archive_entry_size(entry))});
    if (archive_read_data_skip(reader.get()) != ARCHIVE_OK)
      throw DataError(path + ": the shard is truncated or damaged inside " + name + " (" +
                      std::string(archive_error_string(reader.get())) +
                      "); write it again or leave it out of the urls");
  }
  if (status != ARCHIVE_EOF)
    throw DataError(path + ": " +
                    (members.empty() && status == ARCHIVE_FATAL
                         ? std::string("not a tar archive or unreadable")
                         : "the shard is truncated or damaged after " +
                               (members.empty() ? std::string("its start") : members.back().name)) +
                    " (" + std::string(archive_error_string(reader.get())) +
                    "); write it again or leave it out of the urls");
  return members;
}

std::string read_at(int fd, const std::string& name, uint64_t offset, uint64_t size) {
  std::string bytes(size, '\0');
  uint64_t done = 0;
  while (done < size) {
    const ssize_t got =
        ::pread(fd, bytes.data() + done, size - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0)
      throw DataError(name + ": cannot read " + std::to_string(size) + " bytes at offset " +
                      std::to_string(offset) + " (" +
                      (got == 0 ? std::string("the shard is shorter than when it was listed")
                                : std::string(std::strerror(errno))) +
                      ")");
    done += static_cast<uint64_t>(got);
  }
  return bytes;
}

std::string read_bytes(const std::string& path, uint64_t offset, uint64_t size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw DataError(path + ": cannot open the shard (" + std::strerror(errno) + ")");
  try {
    std::string bytes = read_at(fd, path, offset, size);
    ::close(fd);
    return bytes;
  } catch (...) {
    ::close(fd);
    throw;
  }
}

}  // namespace runner::data
