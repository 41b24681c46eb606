#include "util/image_header.hpp"

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "runner/error.hpp"

namespace runner::util {
namespace {

uint32_t big_endian32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}
uint16_t big_endian16(const unsigned char* p) { return static_cast<uint16_t>((p[0] << 8) | p[1]); }

[[noreturn]] void bad(const std::string& path, const std::string& what) {
  throw DataError(path + ": " + what + "; replace or remove the file");
}

ImageHeader png_header(const std::string& path, const std::vector<unsigned char>& head,
                       const std::vector<unsigned char>& tail) {
  // 8-byte signature, then the IHDR chunk: length, "IHDR", width, height (big-endian).
  if (head.size() < 24 || std::memcmp(head.data() + 12, "IHDR", 4) != 0)
    bad(path, "a PNG without its IHDR header (corrupt)");
  ImageHeader h{static_cast<int>(big_endian32(head.data() + 16)),
                static_cast<int>(big_endian32(head.data() + 20)), "png"};
  if (h.width <= 0 || h.height <= 0) bad(path, "a PNG of size 0 (corrupt)");
  // The last chunk of a whole PNG: length 0, "IEND", its CRC.
  static const std::array<unsigned char, 12> iend = {0,   0,   0,    0,    'I',  'E',
                                                     'N', 'D', 0xAE, 0x42, 0x60, 0x82};
  if (tail.size() < iend.size() ||
      std::memcmp(tail.data() + tail.size() - iend.size(), iend.data(), iend.size()) != 0)
    bad(path, "a PNG cut short (its IEND end chunk is missing)");
  return h;
}

ImageHeader jpeg_header(const std::string& path, std::istream& in,
                        const std::vector<unsigned char>& tail) {
  // Markers from the start: the first start-of-frame (SOF0..SOF15 but DHT, JPG, DAC) holds
  // the height and width.
  in.clear();
  in.seekg(2);
  for (;;) {
    unsigned char marker[4];
    if (!in.read(reinterpret_cast<char*>(marker), 4) || marker[0] != 0xFF)
      bad(path, "a JPEG whose frame header cannot be found (corrupt)");
    const unsigned char kind = marker[1];
    const uint16_t length = big_endian16(marker + 2);
    if (kind >= 0xC0 && kind <= 0xCF && kind != 0xC4 && kind != 0xC8 && kind != 0xCC) {
      unsigned char frame[5];
      if (!in.read(reinterpret_cast<char*>(frame), 5)) bad(path, "a JPEG cut short");
      ImageHeader h{big_endian16(frame + 3), big_endian16(frame + 1), "jpeg"};
      if (h.width <= 0 || h.height <= 0) bad(path, "a JPEG of size 0 (corrupt)");
      // A whole JPEG ends with the end-of-image marker (some writers pad a few bytes after it).
      bool ends = false;
      for (size_t i = 0; i + 1 < tail.size(); ++i)
        ends = ends || (tail[i] == 0xFF && tail[i + 1] == 0xD9);
      if (!ends) bad(path, "a JPEG cut short (its end-of-image marker is missing)");
      return h;
    }
    if (length < 2) bad(path, "a JPEG with a broken marker (corrupt)");
    in.seekg(length - 2, std::ios::cur);
  }
}

// The header of the image `in` holds (`path` names it in messages).
std::optional<ImageHeader> header_of(const std::string& path, std::istream& in) {
  std::vector<unsigned char> head(64);
  in.read(reinterpret_cast<char*>(head.data()), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  if (head.empty()) bad(path, "an empty file, not an image");
  in.clear();
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  std::vector<unsigned char> tail(static_cast<size_t>(std::min<std::streamoff>(size, 64)));
  in.seekg(size - static_cast<std::streamoff>(tail.size()));
  in.read(reinterpret_cast<char*>(tail.data()), static_cast<std::streamsize>(tail.size()));
  static const std::array<unsigned char, 8> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  if (head.size() >= 8 && std::memcmp(head.data(), png.data(), png.size()) == 0)
    return png_header(path, head, tail);
  if (head.size() >= 3 && head[0] == 0xFF && head[1] == 0xD8 && head[2] == 0xFF)
    return jpeg_header(path, in, tail);
  return std::nullopt;
}

}  // namespace

std::optional<ImageHeader> read_image_header(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError(path + ": cannot read it (" + std::strerror(errno) + ")");
  return header_of(path, in);
}

std::optional<ImageHeader> image_header_of(const std::string& bytes, const std::string& name) {
  std::istringstream in(bytes);
  return header_of(name, in);
}

}  // namespace runner::util
