// Manifest lookups, value printing and serialization. The text is laid out by hand (one line per
// file and per entry) so that the checksum member comes last and the file diffs well.
#include "ckpt/manifest.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "ckpt/checksum.h"
#include "ckpt/manifest_json.h"

namespace ember::ckpt {

using nlohmann::json;

std::string_view sharding_name(Sharding sharding) {
  return sharding == Sharding::Replicated ? "replicated" : "dim0";
}

std::string_view value_type_name(const Value& value) {
  static constexpr std::string_view kNames[] = {"bool",   "int64",      "uint64",      "float64",
                                                "string", "int64_list", "float64_list"};
  return kNames[value.index()];
}

std::string value_to_string(const Value& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) return json(v).dump();
        else if constexpr (std::is_same_v<T, bool>) return v ? "true" : "false";
        else if constexpr (std::is_same_v<T, std::vector<int64_t>> ||
                           std::is_same_v<T, std::vector<double>>)
          return fmt::format("[{}]", fmt::join(v, ", "));
        else return fmt::format("{}", v);
      },
      value);
}

uint64_t TensorEntry::row_bytes() const {
  uint64_t bytes = element_size(dtype);
  for (int i = 1; i < shape.size(); ++i) bytes *= static_cast<uint64_t>(shape[i]);
  return bytes;
}

const TensorEntry& Entry::tensor() const {
  if (const auto* tensor = std::get_if<TensorEntry>(&content)) return *tensor;
  fail("checkpoint entry '{}' is a {} value, not a tensor", name,
       value_type_name(std::get<Value>(content)));
}

const Value& Entry::value() const {
  if (const auto* value = std::get_if<Value>(&content)) return *value;
  fail("checkpoint entry '{}' is a tensor, not a value", name);
}

const Entry* Manifest::find(std::string_view name) const {
  auto it = std::lower_bound(entries.begin(), entries.end(), name,
                             [](const Entry& entry, std::string_view key) { return entry.name < key; });
  return it != entries.end() && it->name == name ? &*it : nullptr;
}

const DataFile* Manifest::find_file(std::string_view name) const {
  for (const DataFile& file : files)
    if (file.name == name) return &file;
  return nullptr;
}

namespace {

json value_json(const Value& value) {
  return std::visit(
      [](const auto& v) -> json {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, double>) return format_float64(v);
        else if constexpr (std::is_same_v<T, std::vector<double>>) {
          json list = json::array();
          for (double element : v) list.push_back(format_float64(element));
          return list;
        } else return json(v);
      },
      value);
}

json chunk_json(const Chunk& chunk, const TensorEntry& tensor) {
  // Coordinates in the global tensor: dim 0 at row_begin, the other dims at 0 (format version 1
  // chunks are row slabs); a 0-d tensor's single chunk has empty start and shape.
  json start = json::array();
  json shape = json::array();
  for (int i = 0; i < tensor.shape.size(); ++i) {
    start.push_back(i == 0 ? chunk.row_begin : 0);
    shape.push_back(i == 0 ? chunk.rows : tensor.shape[i]);
  }
  json sums = json::array();
  for (uint64_t sum : chunk.checksums) sums.push_back(checksum_hex(sum));
  return {{"file", chunk.file},   {"offset", chunk.offset},          {"length", chunk.length},
          {"start", start},       {"shape", shape},                  {"block_bytes", chunk.block_bytes},
          {"checksums", sums}};
}

json entry_json(const Entry& entry) {
  if (!entry.is_tensor()) {
    const Value& value = entry.value();
    return {{"name", entry.name}, {"kind", "value"}, {"type", value_type_name(value)},
            {"value", value_json(value)}};
  }
  const TensorEntry& tensor = entry.tensor();
  json chunks = json::array();
  for (const Chunk& chunk : tensor.chunks) chunks.push_back(chunk_json(chunk, tensor));
  return {{"name", entry.name},
          {"kind", "tensor"},
          {"dtype", dtype_name(tensor.dtype)},
          {"shape", tensor.shape.vec()},
          {"sharding", sharding_name(tensor.sharding)},
          {"chunks", chunks}};
}

}  // namespace

std::string serialize_manifest(const Manifest& manifest) {
  std::string text = "{\n";
  text += fmt::format("\"format\": {},\n", json(kFormatName).dump());
  text += fmt::format("\"format_version\": {},\n", manifest.format_version);
  text += fmt::format("\"world_size\": {},\n", manifest.world_size);
  text += "\"files\": [";
  for (size_t i = 0; i < manifest.files.size(); ++i) {
    const DataFile& file = manifest.files[i];
    text += i == 0 ? "\n" : ",\n";
    text += json{{"name", file.name}, {"size", file.size}, {"rank", file.rank}}.dump();
  }
  text += "\n],\n\"entries\": [";
  for (size_t i = 0; i < manifest.entries.size(); ++i) {
    text += i == 0 ? "\n" : ",\n";
    const Entry& entry = manifest.entries[i];
    try {
      text += entry_json(entry).dump();
    } catch (const json::exception& error) {  // a string value that is not valid UTF-8
      fail("checkpoint: entry '{}' cannot be written: {}", entry.name, error.what());
    }
  }
  text += "\n]";
  return seal_manifest_text(std::move(text));
}

std::string seal_manifest_text(std::string body) {
  const uint64_t sum = checksum(body.data(), body.size());
  return body + std::string(kChecksumPrefix) + checksum_hex(sum) + std::string(kChecksumSuffix);
}

}  // namespace ember::ckpt
