// Dataset `image_csv`: images a CSV file lists, one row per image with its path and its label
// (a class name or a class index), read with OpenCV on demand. The CSV is parsed by Debian's
// fast-cpp-csv-parser (quoted fields, CRLF, a header naming the columns).

#define CSV_IO_NO_THREAD
#include <libfccp/csv.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "array_dataset.hpp"
#include "datasets.hpp"
#include "image_files.hpp"
#include "runner/error.hpp"

namespace runner::data {
namespace {

namespace fs = std::filesystem;

/// One CSV's rows: each image's path (absolute) and label text, with its line.
struct CsvRows {
  std::vector<std::string> files, labels;
  std::vector<unsigned> lines;
  bool has_labels = false;
};

using CsvReader =
    ::io::CSVReader<2, ::io::trim_chars<' ', '\t'>, ::io::double_quote_escape<',', '"'>>;

// The rows of `csv`, paths resolved against `root` ("" = the CSV's folder). `labels_needed`:
// a CSV without the label column is an error (training data), else a test split without
// labels. Throws DataError naming the file, its line and the column.
CsvRows read_rows(const std::string& csv, const std::string& root, const std::string& path_column,
                  const std::string& label_column, bool labels_needed) {
  CsvRows rows;
  const fs::path base = root.empty() ? fs::path(csv).parent_path() : fs::path(root);
  try {
    CsvReader in(csv);
    in.read_header(::io::ignore_extra_column | ::io::ignore_missing_column, path_column,
                   label_column);
    if (!in.has_column(path_column))
      throw DataError(csv + ":1: no column '" + path_column +
                      "' in the header: set data.dataset.path_column to the column of the image "
                      "paths");
    rows.has_labels = in.has_column(label_column);
    if (labels_needed && !rows.has_labels)
      throw DataError(csv + ":1: no column '" + label_column +
                      "' in the header: set data.dataset.label_column to the column of the "
                      "labels");
    std::string path, label;
    while (in.read_row(path, label)) {
      const unsigned line = in.get_file_line();
      const std::string where = csv + ":" + std::to_string(line) + ": ";
      if (path.empty()) throw DataError(where + "the " + path_column + " column is empty");
      fs::path file(path);
      if (file.is_relative()) file = base / file;
      std::error_code ec;
      if (!fs::is_regular_file(file, ec))
        throw DataError(where + file.lexically_normal().string() + " does not exist (" +
                        path_column + " '" + path + "', relative to " +
                        (root.empty() ? "the CSV's folder" : "data.dataset.root") +
                        "): fix the row or data.dataset.root");
      if (rows.has_labels && label.empty())
        throw DataError(where + "the " + label_column +
                        " column is empty: give each image "
                        "its class");
      rows.files.push_back(file.lexically_normal().string());
      rows.labels.push_back(label);
      rows.lines.push_back(line);
      label.clear();
    }
  } catch (const DataError&) {
    throw;
  } catch (const std::exception& error) {  // the parser's own: it names the file and line
    throw DataError(std::string("dataset image_csv: ") + error.what());
  }
  if (rows.files.empty()) throw DataError(csv + ": no rows under the header");
  return rows;
}

// A row's label text split at spaces and tabs: several for multi-label data.
std::vector<std::string> label_tokens(const std::string& text) {
  std::vector<std::string> tokens;
  std::istringstream in(text);
  for (std::string token; in >> token;) tokens.push_back(token);
  return tokens;
}

bool all_indices(const std::vector<std::string>& labels) {
  return std::all_of(labels.begin(), labels.end(), [](const std::string& text) {
    const auto tokens = label_tokens(text);
    return !tokens.empty() && std::all_of(tokens.begin(), tokens.end(), [](const std::string& s) {
      return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
    });
  });
}

// Class names: the sorted label texts, or "0".."max" when every label is an index.
std::vector<std::string> class_names_of(const CsvRows& rows) {
  std::vector<std::string> names;
  if (all_indices(rows.labels)) {
    int64_t top = 0;
    for (const auto& l : rows.labels)
      for (const auto& token : label_tokens(l)) top = std::max<int64_t>(top, std::stoll(token));
    for (int64_t c = 0; c <= top; ++c) names.push_back(std::to_string(c));
    return names;
  }
  std::set<std::string> unique;
  for (const auto& l : rows.labels)
    for (const auto& token : label_tokens(l)) unique.insert(token);
  return {unique.begin(), unique.end()};
}

// Each row's classes, ascending (several where its label names several: multi-label data).
std::vector<std::vector<int64_t>> label_indices(const CsvRows& rows,
                                                const std::vector<std::string>& classes,
                                                const std::string& csv,
                                                const std::string& label_column) {
  std::map<std::string, int64_t> index;
  for (size_t c = 0; c < classes.size(); ++c) index[classes[c]] = static_cast<int64_t>(c);
  std::vector<std::vector<int64_t>> labels(rows.labels.size());
  if (!rows.has_labels) return labels;
  for (size_t r = 0; r < rows.labels.size(); ++r) {
    for (const std::string& token : label_tokens(rows.labels[r])) {
      const auto it = index.find(token);
      if (it == index.end())
        throw DataError(csv + ":" + std::to_string(rows.lines[r]) + ": " + label_column + " '" +
                        token + "' is not a class of the training CSV (" +
                        std::to_string(classes.size()) + " classes)");
      labels[r].push_back(it->second);
    }
    std::sort(labels[r].begin(), labels[r].end());
    labels[r].erase(std::unique(labels[r].begin(), labels[r].end()), labels[r].end());
  }
  return labels;
}

DatasetSplits make_image_csv(const nlohmann::json& params, const DatasetContext& context) {
  const std::string file = resolve_path(params.at("file").get<std::string>(), context.config_dir);
  const std::string root =
      params.at("root").is_null()
          ? ""
          : resolve_path(params.at("root").get<std::string>(), context.config_dir);
  const std::string path_column = params.at("path_column").get<std::string>();
  const std::string label_column = params.at("label_column").get<std::string>();
  const bool color = params.at("mode").get<std::string>() == "color";

  const CsvRows rows = read_rows(file, root, path_column, label_column, true);
  DatasetSplits splits;
  splits.class_names = class_names_of(rows);
  splits.num_classes = static_cast<int64_t>(splits.class_names.size());
  auto full = image_files_dataset(
      rows.files, label_indices(rows, splits.class_names, file, label_column), color, file);
  std::tie(splits.train, splits.val) = split_train_val(full, params, context.seed);
  if (!params.at("test_file").is_null()) {
    const std::string test =
        resolve_path(params.at("test_file").get<std::string>(), context.config_dir);
    const CsvRows test_rows = read_rows(test, root, path_column, label_column, false);
    splits.test = image_files_dataset(
        test_rows.files, label_indices(test_rows, splits.class_names, test, label_column), color,
        test, test_rows.has_labels);
  }
  return splits;
}

}  // namespace

void register_image_csv(Registry<DatasetFactory>& registry) {
  nlohmann::json properties = {
      {"file",
       {{"type", "string"},
        {"x-runner-path", "file"},
        {"description",
         "CSV with a header: one row per image, its path and its label (a class name, or a "
         "class index when every label is one). Relative to the file that sets it."}}},
      {"root",
       {{"type", {"string", "null"}},
        {"default", nullptr},
        {"x-runner-path", "folder"},
        {"description", "Folder the rows' relative paths start from; null: the CSV's folder."}}},
      {"test_file",
       {{"type", {"string", "null"}},
        {"default", nullptr},
        {"x-runner-path", "file"},
        {"description",
         "Optional CSV of the test split, laid out like file (the label column may be left "
         "out), using file's classes."}}},
      {"path_column",
       {{"type", "string"},
        {"minLength", 1},
        {"default", "path"},
        {"description", "Header name of the column of image paths."}}},
      {"label_column",
       {{"type", "string"},
        {"minLength", 1},
        {"default", "label"},
        {"description", "Header name of the column of labels."}}},
  };
  properties.update(image_files_properties());
  registry.add(
      "image_csv", make_image_csv,
      {{"type", "object"},
       {"additionalProperties", false},
       {"required", {"file"}},
       {"description", "Images a CSV lists (path and label columns), read with OpenCV on demand."},
       {"properties", properties}},
      "Images listed in a CSV file with their labels (path,label)");
}

}  // namespace runner::data
