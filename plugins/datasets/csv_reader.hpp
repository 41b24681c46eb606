#pragma once
// CSV of pixel rows (the Kaggle digit-recognizer layout), parsed without torch so the fuzzers
// can build it: a header line, then one image per line, an optional leading `label` column and
// integer pixels 0..255.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace runner::data {

/// Parsed pixel rows: row r's pixels are pixels[r * pixels_per_row ...].
struct PixelTable {
  bool has_labels = false;  ///< the first header column is `label`
  size_t pixels_per_row = 0;
  size_t rows = 0;
  std::vector<uint8_t> pixels;
  std::vector<int64_t> labels;       ///< one per row when has_labels
  std::vector<size_t> line_numbers;  ///< 1-based line of each row, for error messages
};

/// Parses `text`, naming `name` in errors. Throws runner::DataError with the line (and column)
/// on an empty file, a row with the wrong number of columns, a non-integer label, or a pixel
/// that is not an integer in 0..255. Blank lines are skipped; CRLF line ends are accepted.
PixelTable parse_pixel_csv(std::string_view text, const std::string& name);

/// Reads and parses the file at `path`.
PixelTable read_pixel_csv(const std::string& path);

}  // namespace runner::data
