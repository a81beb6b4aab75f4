// ember-ckpt inspect, verify and reshard.
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "ckpt/reader.h"
#include "ckpt/reshard.h"
#include "tools/ember-ckpt/commands.h"

namespace ember::ckpt::cli {

using nlohmann::json;

std::vector<double> element_values(const Tensor& tensor) {
  std::vector<double> values(static_cast<size_t>(tensor.numel()));
  dispatch_dtype(tensor.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* data = static_cast<const T*>(tensor.raw_data_ptr());
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = static_cast<double>(static_cast<compute_t<T>>(data[i]));
  });
  return values;
}

namespace {

// JSON has no NaN or infinity: they are spelled as strings, as tools/ckpt_read.py does.
json number_json(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return value;
}

json value_json(const Value& value) {
  return std::visit(
      [](const auto& v) -> json {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, double>) return number_json(v);
        else if constexpr (std::is_same_v<T, std::vector<double>>) {
          json list = json::array();
          for (double element : v) list.push_back(number_json(element));
          return list;
        } else return json(v);
      },
      value);
}

json entry_listing(const Entry& entry) {
  if (!entry.is_tensor())
    return {{"name", entry.name}, {"kind", "value"}, {"type", value_type_name(entry.value())},
            {"value", value_json(entry.value())}};
  const TensorEntry& tensor = entry.tensor();
  json chunks = json::array();
  for (const Chunk& chunk : tensor.chunks)
    chunks.push_back({{"file", chunk.file}, {"offset", chunk.offset}, {"length", chunk.length},
                      {"rows", {chunk.row_begin, chunk.row_begin + chunk.rows}}});
  return {{"name", entry.name}, {"kind", "tensor"}, {"dtype", dtype_name(tensor.dtype)},
          {"shape", tensor.shape.vec()}, {"sharding", sharding_name(tensor.sharding)},
          {"bytes", tensor.total_bytes()}, {"chunks", chunks}};
}

int print_entry(const CheckpointReader& reader, const std::string& name) {
  const Entry& entry = reader.entry(name);
  json out;
  if (entry.is_tensor()) {
    const Tensor tensor = reader.read(name);
    json data = json::array();
    dispatch_dtype(tensor.dtype(), [&](auto zero) {  // integers exactly, floats as doubles
      using T = decltype(zero);
      const T* elements = static_cast<const T*>(tensor.raw_data_ptr());
      for (int64_t i = 0; i < tensor.numel(); ++i) {
        if constexpr (is_floating(dtype_of<T>()))
          data.push_back(number_json(static_cast<double>(static_cast<compute_t<T>>(elements[i]))));
        else data.push_back(elements[i]);
      }
    });
    out = {{"name", name}, {"dtype", dtype_name(tensor.dtype())}, {"shape", tensor.sizes().vec()},
           {"data", data}};
  } else {
    out = {{"name", name}, {"type", value_type_name(entry.value())}, {"value", value_json(entry.value())}};
  }
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

}  // namespace

int inspect(const std::filesystem::path& directory, const std::string& entry, bool as_json) {
  const CheckpointReader reader(directory);
  if (!entry.empty()) return print_entry(reader, entry);
  const Manifest& manifest = reader.manifest();
  uint64_t total = 0;
  for (const DataFile& file : manifest.files) total += file.size;
  if (as_json) {
    json entries = json::array();
    for (const Entry& item : manifest.entries) entries.push_back(entry_listing(item));
    json files = json::array();
    for (const DataFile& file : manifest.files)
      files.push_back({{"name", file.name}, {"rank", file.rank}, {"size", file.size}});
    std::printf("%s\n", json{{"format_version", manifest.format_version},
                             {"world_size", manifest.world_size}, {"data_bytes", total},
                             {"files", files}, {"entries", entries}}.dump(1).c_str());
    return 0;
  }
  fmt::print("checkpoint {}: format {}, saved by {} ranks, {} entries, {} data bytes\n",
             directory.string(), manifest.format_version, manifest.world_size,
             manifest.entries.size(), total);
  for (const DataFile& file : manifest.files)
    fmt::print("  file {} (rank {}): {} bytes\n", file.name, file.rank, file.size);
  for (const Entry& item : manifest.entries) {
    if (!item.is_tensor()) {
      fmt::print("  {}  {} = {}\n", item.name, value_type_name(item.value()),
                 value_to_string(item.value()));
      continue;
    }
    const TensorEntry& tensor = item.tensor();
    fmt::print("  {}  {} {} {}  {} bytes in {} chunks\n", item.name, dtype_name(tensor.dtype),
               tensor.shape, sharding_name(tensor.sharding), tensor.total_bytes(),
               tensor.chunks.size());
    for (const Chunk& chunk : tensor.chunks)
      fmt::print("      rows [{}, {}) in {} at bytes [{}, {})\n", chunk.row_begin,
                 chunk.row_begin + chunk.rows, chunk.file, chunk.offset, chunk.offset + chunk.length);
  }
  return 0;
}

int verify(const std::filesystem::path& directory) {
  const CheckpointReader reader(directory);
  reader.verify();
  uint64_t chunks = 0;
  for (const Entry& entry : reader.manifest().entries)
    if (entry.is_tensor()) chunks += entry.tensor().chunks.size();
  fmt::print("checkpoint {}: OK ({} chunks, {} bytes verified)\n", directory.string(), chunks,
             reader.bytes_read());
  return 0;
}

int reshard(const std::filesystem::path& directory, int world_size, const std::filesystem::path& out) {
  const std::filesystem::path target = std::filesystem::absolute(out).lexically_normal();
  check(target.has_filename(), "reshard: --out {} must name the new checkpoint directory", out.string());
  const std::filesystem::path committed = ckpt::reshard(
      directory, world_size,
      {.root = target.parent_path(), .name = target.filename().string(), .update_latest = false});
  fmt::print("resharded {} to {} ranks: {}\n", directory.string(), world_size, committed.string());
  return 0;
}

}  // namespace ember::ckpt::cli
