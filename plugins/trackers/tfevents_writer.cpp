#include "trackers/tfevents_writer.hpp"

#include <fcntl.h>

#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "runner/error.hpp"

namespace runner::trackers {

namespace {

std::array<uint32_t, 256> make_crc_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;  // reflected
    table[i] = c;
  }
  return table;
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Protocol buffer wire format, just what Event and Summary need.
void put_varint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}
void put_tag(std::string& out, int field, int wire_type) {
  put_varint(out, static_cast<uint64_t>(field) << 3 | wire_type);
}
template <class T>
void put_little_endian(std::string& out, T value) {  // x86/ARM hosts are little-endian
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}
void put_bytes(std::string& out, int field, const std::string& bytes) {
  put_tag(out, field, 2);
  put_varint(out, bytes.size());
  out += bytes;
}

/// Event { wall_time = 1 (double), step = 2 (int64) } plus the caller's other fields.
std::string event_header(double wall_time, int64_t step) {
  std::string event;
  put_tag(event, 1, 1);
  put_little_endian(event, wall_time);
  put_tag(event, 2, 0);
  put_varint(event, static_cast<uint64_t>(step));  // two's complement, as protobuf's int64
  return event;
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

}  // namespace

uint32_t crc32c(const void* data, size_t size) {
  static const std::array<uint32_t, 256> table = make_crc_table();
  const auto* bytes = static_cast<const unsigned char*>(data);
  uint32_t crc = 0xffffffffu;
  for (size_t i = 0; i < size; ++i) crc = table[(crc ^ bytes[i]) & 0xff] ^ (crc >> 8);
  return crc ^ 0xffffffffu;
}

uint32_t masked_crc32c(const void* data, size_t size) {
  const uint32_t crc = crc32c(data, size);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

TfEventsWriter::TfEventsWriter(const std::filesystem::path& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  const double start = now_seconds();
  const std::string base =
      "events.out.tfevents." + std::to_string(static_cast<int64_t>(start)) + "." + host_name();
  path_ = dir / base;
  for (int n = 1; std::filesystem::exists(path_); ++n)
    path_ = dir / (base + "." + std::to_string(n));
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error("cannot write " + path_.string() + ": " + std::strerror(errno));
  std::string event = event_header(start, 0);
  put_bytes(event, 3, "brain.Event:2");
  write_record(event);
  flush();
}

TfEventsWriter::~TfEventsWriter() {
  try {
    flush();
  } catch (const std::exception&) {
    // flush() said so where a caller could act on it.
  }
  if (fd_ >= 0) ::close(fd_);
}

void TfEventsWriter::add_scalar(const std::string& tag, double value, int64_t step,
                                double wall_time) {
  std::string summary_value;  // Summary.Value { tag = 1, simple_value = 2 (float) }
  put_bytes(summary_value, 1, tag);
  put_tag(summary_value, 2, 5);
  put_little_endian(summary_value, static_cast<float>(value));
  std::string summary;  // Summary { repeated Value value = 1 }
  put_bytes(summary, 1, summary_value);
  std::string event = event_header(wall_time < 0 ? now_seconds() : wall_time, step);
  put_bytes(event, 5, summary);
  write_record(event);
}

void TfEventsWriter::flush() {
  // Each flush goes to the kernel at once: TensorBoard (or a crash) sees every record so far.
  size_t done = 0;
  while (done < pending_.size()) {
    const ssize_t n = ::write(fd_, pending_.data() + done, pending_.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error("cannot write " + path_.string() + ": " + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  pending_.clear();
}

void TfEventsWriter::write_record(const std::string& data) {
  // TFRecord: uint64 length, masked crc of the length, data, masked crc of the data.
  std::string header;
  put_little_endian(header, static_cast<uint64_t>(data.size()));
  put_little_endian(header, masked_crc32c(header.data(), header.size()));
  pending_ += header;
  pending_ += data;
  put_little_endian(pending_, masked_crc32c(data.data(), data.size()));
}

}  // namespace runner::trackers
