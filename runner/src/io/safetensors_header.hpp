#pragma once
// The torch-free part of the safetensors format: parsing and bounds-checking the header.
// Layout: 8-byte little-endian header length N, N bytes of JSON, then the tensor bytes.

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace runner::io {

/// One tensor of a safetensors file. [begin, end) is relative to the start of the data section.
struct SafetensorsEntry {
  std::string name;
  std::string dtype;  ///< "F32", "F16", "BF16", "F64", "I64", "I32", "I16", "I8", "U8", "BOOL"
  std::vector<int64_t> shape;
  uint64_t begin = 0;
  uint64_t end = 0;
};

/// A checked header: every entry lies inside the file and no two entries overlap.
struct SafetensorsHeader {
  std::vector<SafetensorsEntry> entries;  ///< sorted by begin offset (the file's tensor order)
  std::map<std::string, std::string> metadata;
  uint64_t data_offset = 0;  ///< 8 + header length: where the data section starts in the file
};

/// Bytes per element of a safetensors dtype name, or 0 when the dtype is not supported.
size_t safetensors_dtype_size(const std::string& dtype);

/// Length N of the JSON header from the file's first 8 bytes. Throws DataError (naming `file`)
/// unless 8 + N fits in `file_size` and N is at most 100 MB.
uint64_t safetensors_header_length(const unsigned char* first8, uint64_t file_size,
                                   const std::string& file);

/// Parses the JSON header of a file of `file_size` bytes whose header is `header_length` long.
/// Throws DataError naming `file` for non-object JSON, unknown dtypes, bad shapes, sizes that
/// differ from numel * itemsize, offsets outside the data section and overlapping tensors.
SafetensorsHeader parse_safetensors_header(const std::string& json_text, uint64_t file_size,
                                           const std::string& file);

/// Both steps on a whole file held in memory (`size` bytes).
SafetensorsHeader parse_safetensors_buffer(const unsigned char* data, size_t size,
                                           const std::string& file);

}  // namespace runner::io
