// TensorBoard events files read back by a small TFRecord + protobuf parser written here.

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runner/error.hpp"
#include "trackers/tfevents_writer.hpp"

namespace {

namespace fs = std::filesystem;
using runner::trackers::masked_crc32c;

struct Scalar {
  std::string tag;
  float value = 0;
};
struct Event {
  double wall_time = 0;
  int64_t step = 0;
  std::string file_version;
  std::vector<Scalar> scalars;
};

uint64_t read_varint(const std::string& s, size_t& i) {
  uint64_t value = 0;
  for (int shift = 0;; shift += 7) {
    const auto byte = static_cast<unsigned char>(s.at(i++));
    value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if (!(byte & 0x80)) return value;
  }
}

template <class T>
T read_fixed(const std::string& s, size_t& i) {
  T value;
  std::memcpy(&value, s.substr(i, sizeof(T)).data(), sizeof(T));
  i += sizeof(T);
  return value;
}

/// Calls on_field(field, wire_type, bytes-or-empty, varint, i) for each field of a message.
template <class OnField>
void parse_message(const std::string& s, OnField on_field) {
  size_t i = 0;
  while (i < s.size()) {
    const uint64_t key = read_varint(s, i);
    const int field = static_cast<int>(key >> 3), wire = static_cast<int>(key & 7);
    if (wire == 2) {
      const size_t n = read_varint(s, i);
      on_field(field, wire, s.substr(i, n), s, i);
      i += n;
    } else {
      on_field(field, wire, std::string(), s, i);  // consumes the value
    }
  }
}

Event parse_event(const std::string& data) {
  Event event;
  parse_message(
      data, [&](int field, int wire, const std::string& bytes, const std::string& s, size_t& i) {
        if (field == 1 && wire == 1)
          event.wall_time = read_fixed<double>(s, i);
        else if (field == 2 && wire == 0)
          event.step = static_cast<int64_t>(read_varint(s, i));
        else if (field == 3 && wire == 2)
          event.file_version = bytes;
        else if (field == 5 && wire == 2) {
          parse_message(bytes, [&](int f, int w, const std::string& value_bytes, const std::string&,
                                   size_t&) {
            ASSERT_TRUE(f == 1 && w == 2) << "Summary has only `value` fields";
            Scalar scalar;
            parse_message(value_bytes, [&](int vf, int vw, const std::string& b,
                                           const std::string& vs, size_t& vi) {
              if (vf == 1 && vw == 2)
                scalar.tag = b;
              else if (vf == 2 && vw == 5)
                scalar.value = read_fixed<float>(vs, vi);
              else
                ADD_FAILURE() << "unexpected Summary.Value field " << vf;
            });
            event.scalars.push_back(scalar);
          });
        } else {
          ADD_FAILURE() << "unexpected Event field " << field << " wire type " << wire;
        }
      });
  return event;
}

/// Every record of a TFRecord file, with both CRCs checked.
std::vector<Event> read_events(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<Event> events;
  size_t i = 0;
  while (i < file.size()) {
    const std::string header = file.substr(i, 8);
    const uint64_t length = read_fixed<uint64_t>(file, i);
    EXPECT_EQ(read_fixed<uint32_t>(file, i), masked_crc32c(header.data(), 8)) << "length crc";
    const std::string data = file.substr(i, length);
    i += length;
    EXPECT_EQ(read_fixed<uint32_t>(file, i), masked_crc32c(data.data(), data.size())) << "data crc";
    events.push_back(parse_event(data));
  }
  return events;
}

TEST(TfEvents, Crc32cMatchesTheCastagnoliCheckValue) {
  EXPECT_EQ(runner::trackers::crc32c("123456789", 9), 0xe3069283u);  // RFC 3720 / iSCSI check value
  EXPECT_EQ(runner::trackers::crc32c("", 0), 0u);
}

TEST(TfEvents, ScalarsReadBackWithFramingAndFields) {
  const fs::path dir = fs::temp_directory_path() / "runner_tfevents_test";
  fs::remove_all(dir);
  fs::path path;
  {
    runner::trackers::TfEventsWriter writer(dir / "tb");
    path = writer.path();
    writer.add_scalar("train/loss", 2.5, 1, 1000.5);
    writer.add_scalar("train/lr", 1e-3, 123456789012, 1001.0);
    writer.add_scalar("val/accuracy", 0.875, 0);
    writer.flush();
  }
  EXPECT_EQ(path.filename().string().rfind("events.out.tfevents.", 0), 0u) << path;
  const std::vector<Event> events = read_events(path);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].file_version, "brain.Event:2");
  EXPECT_GT(events[0].wall_time, 1.6e9);
  ASSERT_EQ(events[1].scalars.size(), 1u);
  EXPECT_EQ(events[1].scalars[0].tag, "train/loss");
  EXPECT_EQ(events[1].scalars[0].value, 2.5f);
  EXPECT_EQ(events[1].step, 1);
  EXPECT_EQ(events[1].wall_time, 1000.5);
  EXPECT_EQ(events[2].scalars[0].tag, "train/lr");
  EXPECT_EQ(events[2].scalars[0].value, 1e-3f);
  EXPECT_EQ(events[2].step, 123456789012);
  EXPECT_EQ(events[3].scalars[0].value, 0.875f);
  EXPECT_EQ(events[3].step, 0);

  // A second writer in the same second does not overwrite the first file.
  runner::trackers::TfEventsWriter second(dir / "tb");
  EXPECT_NE(second.path(), path);
  EXPECT_EQ(read_events(path).size(), 4u);
  fs::remove_all(dir);
}

TEST(TfEvents, AnUnwritableDirectoryIsAnError) {
  EXPECT_THROW(runner::trackers::TfEventsWriter("/proc/runner_cannot_write_here"), runner::Error);
}

}  // namespace
