#pragma once
// Where each value of a loaded config came from, so that every error can name file:line:col.

#include <map>
#include <string>

namespace runner::config {

/// A position in a source: a file (1-based line and column), or an origin such as
/// "--set model.lr=3" (line 0).
struct Mark {
  std::string origin;
  int line = 0;
  int column = 0;
  /// "exp.yaml:12:3" or the origin alone when it has no line.
  std::string to_string() const;
};

/// JSON pointer ("/optimizer/lr") -> where its key and its value were written.
class SourceMap {
 public:
  void set(const std::string& pointer, const Mark& key, const Mark& value);
  /// The key's mark for `pointer`, else the nearest ancestor's, else a mark naming `fallback`.
  Mark key_mark(const std::string& pointer) const;
  /// The value's mark for `pointer`, else the nearest ancestor's value mark.
  Mark value_mark(const std::string& pointer) const;
  /// Whether the user wrote `pointer` or a key below it (defaults filled in have no entry). In
  /// a resolved copy (a run folder's config.yaml, a sweep's point file: every key written out),
  /// only what a --set wrote counts.
  bool written(const std::string& pointer) const;
  /// Where the user wrote `pointer`, else the first key written below it, else value_mark.
  Mark written_mark(const std::string& pointer) const;
  /// The same for the key: an unknown key set by `--set a.b.c=v` is at that --set.
  Mark written_key_mark(const std::string& pointer) const;
  /// Copies every entry of `other`, replacing entries at the same pointers.
  void merge(const SourceMap& other);
  /// Drops every entry under `pointer` (the value there was replaced wholesale).
  void erase_below(const std::string& pointer);
  void set_fallback(const std::string& origin) { fallback_ = origin; }
  /// The document is a resolved copy: its file wrote every key, defaults included.
  void set_resolved_copy() { resolved_copy_ = true; }

 private:
  const std::pair<Mark, Mark>* first_written(const std::string& pointer) const;

  std::map<std::string, std::pair<Mark, Mark>> entries_;
  std::string fallback_;
  bool resolved_copy_ = false;
};

/// RFC 6901 escaping of one JSON-pointer reference token ("a/b" -> "a~1b").
std::string escape_pointer_token(const std::string& token);

/// JSON pointer of a dotted key path ("data.train_transforms.0.p" -> "/data/train_transforms/0/p").
std::string pointer_from_path(const std::string& dotted);
/// Dotted key path of a JSON pointer ("/optimizer/lr" -> "optimizer.lr"; "" -> "<root>").
std::string path_from_pointer(const std::string& pointer);

}  // namespace runner::config
