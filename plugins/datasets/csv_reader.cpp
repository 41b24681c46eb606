#include "csv_reader.hpp"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <iterator>

#include "runner/error.hpp"

namespace runner::data {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

std::string_view unquote(std::string_view s) {
  s = trim(s);
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  return s;
}

/// Splits one line at commas into `cells` (reusing its storage).
void split_line(std::string_view line, std::vector<std::string_view>& cells) {
  cells.clear();
  size_t start = 0;
  while (true) {
    const size_t comma = line.find(',', start);
    if (comma == std::string_view::npos) {
      cells.push_back(line.substr(start));
      return;
    }
    cells.push_back(line.substr(start, comma - start));
    start = comma + 1;
  }
}

std::string shown(std::string_view cell) {
  std::string s(cell.substr(0, 20));
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  return s;
}

bool parse_int(std::string_view cell, int64_t& value) {
  cell = trim(cell);
  if (!cell.empty() && cell.front() == '+') cell.remove_prefix(1);
  const auto [end, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), value);
  return ec == std::errc() && end == cell.data() + cell.size() && !cell.empty();
}

}  // namespace

PixelTable parse_pixel_csv(std::string_view text, const std::string& name) {
  PixelTable table;
  std::vector<std::string_view> cells;
  size_t line_number = 0;
  size_t pos = 0;
  size_t columns = 0;
  bool header_seen = false;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_number;
    if (trim(line).empty()) continue;
    split_line(line, cells);
    const std::string where = name + ":" + std::to_string(line_number);
    if (!header_seen) {
      header_seen = true;
      columns = cells.size();
      table.has_labels = unquote(cells[0]) == "label";
      table.pixels_per_row = columns - (table.has_labels ? 1 : 0);
      if (table.pixels_per_row == 0)
        throw DataError(where + ": the header names no pixel columns (expected label,pixel0,...)");
      continue;
    }
    if (cells.size() != columns)
      throw DataError(where + ": " + std::to_string(cells.size()) + " columns, the header has " +
                      std::to_string(columns) + "; fix or remove this row");
    size_t first_pixel = 0;
    if (table.has_labels) {
      int64_t label = 0;
      if (!parse_int(cells[0], label))
        throw DataError(where + ": label '" + shown(cells[0]) + "' is not an integer");
      table.labels.push_back(label);
      first_pixel = 1;
    }
    for (size_t c = first_pixel; c < cells.size(); ++c) {
      int64_t v = 0;
      if (!parse_int(cells[c], v) || v < 0 || v > 255)
        throw DataError(where + ": column " + std::to_string(c + 1) + " (pixel" +
                        std::to_string(c - first_pixel) + "): '" + shown(cells[c]) +
                        "' is not an integer pixel in 0..255");
      table.pixels.push_back(static_cast<uint8_t>(v));
    }
    table.line_numbers.push_back(line_number);
    ++table.rows;
  }
  if (!header_seen) throw DataError(name + ": empty CSV file (expected a header line and rows)");
  return table;
}

PixelTable read_pixel_csv(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError(path + ": cannot open the file (" + std::strerror(errno) + ")");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_pixel_csv(text, path);
}

}  // namespace runner::data
