#include "idx_reader.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>

#include <zlib.h>
#include <opencv2/core.hpp>

#include "runner/error.hpp"

namespace runner::data {

size_t idx_element_size(uint8_t type) {
  switch (type) {
    case 0x08:
    case 0x09:
      return 1;
    case 0x0B:
      return 2;
    case 0x0C:
    case 0x0D:
      return 4;
    case 0x0E:
      return 8;
    default:
      return 0;
  }
}

size_t IdxArray::count() const {
  size_t n = 1;
  for (size_t d : dims) n *= d;
  return n;
}

size_t IdxArray::element_size() const { return idx_element_size(type); }

int IdxArray::cv_depth() const {
  switch (type) {
    case 0x08:
      return CV_8U;
    case 0x09:
      return CV_8S;
    case 0x0B:
      return CV_16S;
    case 0x0C:
      return CV_32S;
    case 0x0D:
      return CV_32F;
    default:
      return CV_64F;
  }
}

double IdxArray::value(size_t i) const {
  const uint8_t* p = data.data() + i * element_size();
  switch (type) {
    case 0x08:
      return *p;
    case 0x09:
      return static_cast<int8_t>(*p);
    case 0x0B: {
      int16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case 0x0C: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case 0x0D: {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    default: {
      double v;
      std::memcpy(&v, p, 8);
      return v;
    }
  }
}

namespace {

uint32_t read_be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08X", v);
  return buf;
}

}  // namespace

namespace {

/// Checks the header and the size against it; fills type and dims, returns the header size.
size_t parse_header(const uint8_t* bytes, size_t size, const std::string& name, IdxArray& out) {
  if (size < 4)
    throw DataError(name + ": truncated IDX file (" + std::to_string(size) +
                    " bytes, the header needs at least 4)");
  const uint32_t magic = read_be32(bytes);
  out.type = bytes[2];
  const size_t ndims = bytes[3];
  const size_t elem = idx_element_size(out.type);
  if (bytes[0] != 0 || bytes[1] != 0 || elem == 0 || ndims == 0)
    throw DataError(name + ": wrong magic number " + hex(magic) +
                    " (an IDX file starts with 0x0000TTDD: TT type 08/09/0B/0C/0D/0E, DD dims "
                    ">= 1); is this an MNIST-style file?");
  const size_t header = 4 + 4 * ndims;
  if (size < header)
    throw DataError(name + ": truncated IDX header (" + std::to_string(size) + " bytes, expected " +
                    std::to_string(header) + " for " + std::to_string(ndims) + " dimensions)");
  const size_t payload = size - header;
  size_t bytes_needed = elem;
  bool overflow = false;
  for (size_t d = 0; d < ndims; ++d) {
    const size_t dim = read_be32(bytes + 4 + 4 * d);
    out.dims.push_back(dim);
    overflow = overflow || __builtin_mul_overflow(bytes_needed, dim, &bytes_needed);
  }
  if (overflow || bytes_needed != payload) {
    std::string shape;
    for (size_t d : out.dims) shape += (shape.empty() ? "" : "x") + std::to_string(d);
    const bool too_short = overflow || bytes_needed > payload;
    throw DataError(name + ": " + (too_short ? "truncated" : "trailing bytes in") +
                    " IDX file: the header says " + shape + " elements of " + std::to_string(elem) +
                    " bytes, the file holds " + std::to_string(payload) + " data bytes");
  }
  return header;
}

/// Big-endian on disk -> native (little-endian) order.
void swap_bytes(IdxArray& a) {
  const size_t elem = a.element_size();
  if (elem == 1) return;
  for (size_t i = 0; i < a.data.size(); i += elem)
    for (size_t lo = 0, hi = elem - 1; lo < hi; ++lo, --hi)
      std::swap(a.data[i + lo], a.data[i + hi]);
}

}  // namespace

IdxArray parse_idx(const uint8_t* bytes, size_t size, const std::string& name) {
  IdxArray out;
  const size_t header = parse_header(bytes, size, name, out);
  out.data.assign(bytes + header, bytes + size);
  swap_bytes(out);
  return out;
}

IdxArray parse_idx(std::vector<uint8_t>&& bytes, const std::string& name) {
  IdxArray out;
  const size_t header = parse_header(bytes.data(), bytes.size(), name, out);
  bytes.erase(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(header));
  out.data = std::move(bytes);
  swap_bytes(out);
  return out;
}

bool is_gzip(const uint8_t* bytes, size_t size) {
  return size >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b;
}

std::vector<uint8_t> gunzip(const uint8_t* bytes, size_t size, const std::string& name,
                            size_t max_output) {
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) throw DataError(name + ": zlib init failed");
  std::vector<uint8_t> out;
  if (size >= 18) {  // ISIZE, the trailer's size mod 2^32: a hint that avoids regrowing
    const size_t hint = bytes[size - 4] | (size_t{bytes[size - 3]} << 8) |
                        (size_t{bytes[size - 2]} << 16) | (size_t{bytes[size - 1]} << 24);
    out.reserve(std::min(hint, std::min(max_output, size * 1032)));
  }
  std::vector<uint8_t> chunk(1 << 16);
  size_t consumed = 0;
  std::string error;
  while (error.empty()) {
    if (zs.avail_in == 0 && consumed < size) {
      const size_t n = std::min<size_t>(size - consumed, size_t{1} << 30);
      zs.next_in = const_cast<Bytef*>(bytes + consumed);
      zs.avail_in = static_cast<uInt>(n);
      consumed += n;
    }
    zs.next_out = chunk.data();
    zs.avail_out = static_cast<uInt>(chunk.size());
    const int rc = inflate(&zs, Z_NO_FLUSH);
    const size_t produced = chunk.size() - zs.avail_out;
    if (out.size() + produced > max_output) {
      error = "gzip data inflates beyond " + std::to_string(max_output) + " bytes";
      break;
    }
    out.insert(out.end(), chunk.data(), chunk.data() + produced);
    const bool input_left = zs.avail_in > 0 || consumed < size;
    if (rc == Z_STREAM_END) {
      if (!input_left) break;
      // Concatenated members (`cat a.gz b.gz`) continue with another gzip header.
      if (inflateReset(&zs) != Z_OK) error = "corrupt gzip data after the first member";
    } else if (rc == Z_BUF_ERROR || (rc == Z_OK && !input_left && produced == 0)) {
      error = "truncated gzip stream; re-download the file";
    } else if (rc != Z_OK) {
      error = std::string("corrupt gzip data (") + (zs.msg ? zs.msg : "zlib error") +
              "); re-download the file";
    }
  }
  inflateEnd(&zs);
  if (!error.empty()) throw DataError(name + ": " + error);
  return out;
}

IdxArray read_idx_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError(path + ": cannot open the file (" + std::strerror(errno) + ")");
  in.seekg(0, std::ios::end);
  std::vector<uint8_t> raw(static_cast<size_t>(std::max<std::streamoff>(in.tellg(), 0)));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(raw.size()));
  if (!in) throw DataError(path + ": read error");
  if (is_gzip(raw.data(), raw.size())) {
    std::vector<uint8_t> inflated = gunzip(raw.data(), raw.size(), path);
    raw = std::vector<uint8_t>();  // free the compressed bytes before decoding
    return parse_idx(std::move(inflated), path);
  }
  return parse_idx(std::move(raw), path);
}

}  // namespace runner::data
