#include "config/source_map.hpp"

#include <vector>

namespace runner::config {

std::string Mark::to_string() const {
  if (line <= 0) return origin;
  return origin + ":" + std::to_string(line) + ":" + std::to_string(column);
}

void SourceMap::set(const std::string& pointer, const Mark& key, const Mark& value) {
  entries_[pointer] = {key, value};
}

namespace {
std::string parent_pointer(const std::string& pointer) {
  const auto slash = pointer.rfind('/');
  return slash == std::string::npos ? "" : pointer.substr(0, slash);
}
}  // namespace

namespace {
bool from_set(const Mark& mark) { return mark.origin.rfind("--set ", 0) == 0; }
}  // namespace

// Entries at `pointer` or below it are contiguous from lower_bound(pointer), among siblings that
// only share its prefix ("/metrics2" beside "/metrics"). A --set is preferred: it is the user's
// latest word on the key.
const std::pair<Mark, Mark>* SourceMap::first_written(const std::string& pointer) const {
  const std::pair<Mark, Mark>* first = nullptr;
  for (auto it = entries_.lower_bound(pointer);
       it != entries_.end() && it->first.rfind(pointer, 0) == 0; ++it) {
    if (it->first != pointer && it->first.rfind(pointer + "/", 0) != 0) continue;
    if (from_set(it->second.second)) return &it->second;
    if (!resolved_copy_ && !first) first = &it->second;
  }
  return first;
}

bool SourceMap::written(const std::string& pointer) const {
  return first_written(pointer) != nullptr;
}

Mark SourceMap::written_mark(const std::string& pointer) const {
  const auto* entry = first_written(pointer);
  return entry ? entry->second : value_mark(pointer);
}

Mark SourceMap::written_key_mark(const std::string& pointer) const {
  if (const auto it = entries_.find(pointer); it != entries_.end()) return it->second.first;
  const auto* entry = first_written(pointer);
  return entry ? entry->first : key_mark(pointer);
}

Mark SourceMap::key_mark(const std::string& pointer) const {
  for (std::string p = pointer;; p = parent_pointer(p)) {
    auto it = entries_.find(p);
    if (it != entries_.end()) return it->second.first;
    if (p.empty()) break;
  }
  return Mark{fallback_, 0, 0};
}

Mark SourceMap::value_mark(const std::string& pointer) const {
  for (std::string p = pointer;; p = parent_pointer(p)) {
    auto it = entries_.find(p);
    if (it != entries_.end()) return it->second.second;
    if (p.empty()) break;
  }
  return Mark{fallback_, 0, 0};
}

void SourceMap::merge(const SourceMap& other) {
  for (const auto& kv : other.entries_) entries_[kv.first] = kv.second;
  if (fallback_.empty()) fallback_ = other.fallback_;
}

void SourceMap::erase_below(const std::string& pointer) {
  const std::string prefix = pointer + "/";
  for (auto it = entries_.lower_bound(prefix); it != entries_.end();) {
    if (it->first.compare(0, prefix.size(), prefix) != 0) break;
    it = entries_.erase(it);
  }
}

std::string escape_pointer_token(const std::string& token) {
  std::string out;
  for (char c : token) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

namespace {
std::string unescape_token(const std::string& token) {
  std::string out;
  for (size_t i = 0; i < token.size(); ++i) {
    if (token[i] == '~' && i + 1 < token.size()) {
      out += token[i + 1] == '1' ? '/' : '~';
      ++i;
    } else {
      out += token[i];
    }
  }
  return out;
}
}  // namespace

std::string pointer_from_path(const std::string& dotted) {
  if (dotted.empty()) return "";
  std::string out;
  size_t start = 0;
  while (true) {
    const size_t dot = dotted.find('.', start);
    out += "/" + escape_pointer_token(dotted.substr(start, dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return out;
}

std::string path_from_pointer(const std::string& pointer) {
  if (pointer.empty()) return "<root>";
  std::string out;
  size_t start = 1;
  while (start <= pointer.size()) {
    const size_t slash = pointer.find('/', start);
    if (!out.empty()) out += ".";
    out += unescape_token(pointer.substr(start, slash - start));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return out;
}

}  // namespace runner::config
