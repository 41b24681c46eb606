#pragma once
// An image file's size read from its header, and whether the file is whole, without decoding
// it: what data.check: header looks at for every image before anything trains. Torch-free.

#include <optional>
#include <string>

namespace runner::util {

struct ImageHeader {
  int width = 0, height = 0;
  std::string format;  ///< "png", "jpeg"
};

/// The header of a PNG or JPEG file, having checked that the file starts as one and ends whole
/// (PNG's IEND chunk, JPEG's end-of-image marker): a cut or corrupt file is caught here without
/// decoding it. nullopt for another format (the caller decodes those). Throws runner::DataError
/// naming the file and what is wrong with it.
std::optional<ImageHeader> read_image_header(const std::string& path);

/// The same for an image's bytes in memory (a shard member); `name` names it in messages.
std::optional<ImageHeader> image_header_of(const std::string& bytes, const std::string& name);

}  // namespace runner::util
