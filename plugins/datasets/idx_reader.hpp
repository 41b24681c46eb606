#pragma once
// The IDX format of MNIST-style files, decoded without torch so the fuzzers can build it:
// magic 0x0000TTDD (TT element type, DD number of dims), DD big-endian u32 dims, then the
// big-endian elements. Also a gunzip into memory (files may be .gz or raw).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace runner::data {

/// A decoded IDX file: elements in native byte order, row-major over `dims`.
struct IdxArray {
  uint8_t type = 0x08;        ///< 0x08 u8, 0x09 i8, 0x0B i16, 0x0C i32, 0x0D f32, 0x0E f64
  std::vector<size_t> dims;   ///< e.g. {60000, 28, 28}
  std::vector<uint8_t> data;  ///< count() * element_size() bytes

  size_t count() const;         ///< product of dims (1 for zero dims)
  size_t element_size() const;  ///< bytes per element of `type`
  int cv_depth() const;         ///< the OpenCV depth of `type` (CV_8U ... CV_64F)
  /// Element `i` as a double (requires i < count()).
  double value(size_t i) const;
};

/// Bytes per element of IDX type `type`, or 0 when it is not a valid IDX type.
size_t idx_element_size(uint8_t type);

/// Decodes IDX bytes. Throws runner::DataError naming `name` on a wrong magic number, an
/// unknown type, or a size that does not match the header (truncated or trailing bytes).
IdxArray parse_idx(const uint8_t* bytes, size_t size, const std::string& name);

/// The same, taking ownership of `bytes` (no copy of the payload).
IdxArray parse_idx(std::vector<uint8_t>&& bytes, const std::string& name);

/// Whether `bytes` start with the gzip magic (1f 8b).
bool is_gzip(const uint8_t* bytes, size_t size);

/// Inflates gzip `bytes` (all members). Throws runner::DataError naming `name` when the stream
/// is corrupt or truncated, or when it would exceed `max_output` bytes.
std::vector<uint8_t> gunzip(const uint8_t* bytes, size_t size, const std::string& name,
                            size_t max_output = size_t{1} << 36);

/// Reads `path` (gzip or raw, detected from the content) and decodes it.
IdxArray read_idx_file(const std::string& path);

}  // namespace runner::data
