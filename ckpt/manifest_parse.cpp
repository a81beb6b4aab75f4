// Manifest text -> Manifest: the seal, the JSON (depth-limited, duplicate keys rejected) and every
// member's type and range. Cross-member checks (coverage, bounds, overlap) are in
// manifest_validate.cpp. The input is untrusted: every number is range-checked before use.
#include <cmath>
#include <set>

#include <nlohmann/json.hpp>

#include "ckpt/checksum.h"
#include "ckpt/manifest.h"
#include "ckpt/manifest_json.h"

namespace ember::ckpt {

using nlohmann::json;

namespace {

constexpr int kMaxJsonDepth = 8;        // the format nests 6 deep
constexpr int64_t kMaxDim = int64_t{1} << 62;

// Where a member sits, for messages: "manifest.json: entry 'w': chunk 2: offset".
struct Context {
  std::string where;
  Context at(std::string_view what) const { return {where + ": " + std::string(what)}; }
  template <typename... Args>
  [[noreturn]] void error(fmt::format_string<Args...> format, Args&&... args) const {
    fail("{}: {}", where, fmt::format(format, std::forward<Args>(args)...));
  }
};

std::string_view json_type(const json& value) { return value.type_name(); }

const json& member(const json& object, std::string_view key, const Context& context) {
  auto it = object.find(key);
  if (it == object.end()) context.error("missing member \"{}\"", key);
  return *it;
}

void expect_members(const json& object, std::initializer_list<std::string_view> allowed,
                    const Context& context) {
  if (!object.is_object()) context.error("expected an object, got {}", json_type(object));
  for (const auto& [key, value] : object.items())
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end())
      context.error("unknown member \"{}\"", key);
}

uint64_t as_uint(const json& value, uint64_t max, const Context& context) {
  if (value.is_number_unsigned()) {
    const uint64_t number = value.get<uint64_t>();
    if (number > max) context.error("{} is larger than the limit {}", number, max);
    return number;
  }
  if (value.is_number_integer()) context.error("{} is negative", value.get<int64_t>());
  context.error("expected a non-negative integer, got {} {}", json_type(value), value.dump());
}

std::string as_string(const json& value, size_t max_bytes, const Context& context) {
  if (!value.is_string()) context.error("expected a string, got {}", json_type(value));
  const auto& text = value.get_ref<const std::string&>();
  if (text.size() > max_bytes) context.error("string of {} bytes exceeds {}", text.size(), max_bytes);
  return text;
}

const json& as_array(const json& value, const Context& context) {
  if (!value.is_array()) context.error("expected an array, got {}", json_type(value));
  return value;
}

Dims as_dims(const json& value, const Context& context) {
  as_array(value, context);
  if (value.size() > static_cast<size_t>(Dims::kMaxRank))
    context.error("{} dimensions; at most {} are supported", value.size(), Dims::kMaxRank);
  Dims dims;
  for (const json& dim : value)
    dims.push_back(static_cast<int64_t>(as_uint(dim, kMaxDim, context)));
  return dims;
}

DType as_dtype(const json& value, const Context& context) {
  const std::string name = as_string(value, 64, context);
  for (DType dtype : {kFloat32, kFloat64, kBFloat16, kFloat16, kInt32, kInt64, kBool})
    if (dtype_name(dtype) == name) return dtype;
  context.error("unknown dtype \"{}\"", name);
}

Value as_value(const json& type_json, const json& value, const Context& context) {
  const std::string type = as_string(type_json, 64, context.at("type"));
  const Context at = context.at("value");
  auto float64 = [&](const json& element) {
    std::optional<double> number = parse_float64(as_string(element, 64, at));
    if (!number) at.error("\"{}\" is not a hex float such as 0x1.8p+1", element.get<std::string>());
    return *number;
  };
  if (type == "bool") {
    if (!value.is_boolean()) at.error("expected true or false, got {}", json_type(value));
    return value.get<bool>();
  }
  if (type == "int64") {
    if (!value.is_number_integer()) at.error("expected an integer, got {}", json_type(value));
    if (value.is_number_unsigned() && value.get<uint64_t>() > INT64_MAX)
      at.error("{} does not fit int64", value.get<uint64_t>());
    return value.get<int64_t>();
  }
  if (type == "uint64") return as_uint(value, UINT64_MAX, at);
  if (type == "float64") return float64(value);
  if (type == "string") return as_string(value, kMaxManifestBytes, at);
  if (type == "int64_list" || type == "float64_list") {
    as_array(value, at);
    if (type == "float64_list") {
      std::vector<double> list;
      for (const json& element : value) list.push_back(float64(element));
      return list;
    }
    std::vector<int64_t> list;
    for (const json& element : value) {
      if (!element.is_number_integer() ||
          (element.is_number_unsigned() && element.get<uint64_t>() > INT64_MAX))
        at.error("expected int64 elements, got {}", element.dump());
      list.push_back(element.get<int64_t>());
    }
    return list;
  }
  context.error("unknown value type \"{}\"", type);
}

Chunk as_chunk(const json& object, const Dims& shape, const Context& context) {
  expect_members(object, {"file", "offset", "length", "start", "shape", "block_bytes", "checksums"},
                 context);
  Chunk chunk;
  chunk.file = as_string(member(object, "file", context), 255, context.at("file"));
  chunk.offset = as_uint(member(object, "offset", context), INT64_MAX, context.at("offset"));
  chunk.length = as_uint(member(object, "length", context), INT64_MAX, context.at("length"));
  const Dims start = as_dims(member(object, "start", context), context.at("start"));
  const Dims chunk_shape = as_dims(member(object, "shape", context), context.at("shape"));
  if (start.size() != shape.size() || chunk_shape.size() != shape.size())
    context.error("start {} and shape {} must have the tensor's {} dimensions", start, chunk_shape,
                  shape.size());
  for (int i = 1; i < shape.size(); ++i)
    if (start[i] != 0 || chunk_shape[i] != shape[i])
      context.error("start {} shape {} is not a slab of whole rows of {} (format version 1 "
                    "chunks split dim 0 only)", start, chunk_shape, shape);
  chunk.row_begin = shape.empty() ? 0 : start[0];
  chunk.rows = shape.empty() ? 1 : chunk_shape[0];
  chunk.block_bytes = as_uint(member(object, "block_bytes", context), kMaxBlockBytes,
                              context.at("block_bytes"));
  if (chunk.block_bytes < kMinBlockBytes)
    context.error("block_bytes {} is below the minimum {}", chunk.block_bytes, kMinBlockBytes);
  const Context sums_context = context.at("checksums");
  for (const json& sum : as_array(member(object, "checksums", context), sums_context)) {
    uint64_t parsed;
    if (!parse_checksum_hex(as_string(sum, 64, sums_context), &parsed))
      sums_context.error("\"{}\" is not 16 lowercase hex digits", sum.get<std::string>());
    chunk.checksums.push_back(parsed);
  }
  return chunk;
}

Entry as_entry(const json& object, size_t index, const Context& context) {
  Context at = context.at(fmt::format("entries[{}]", index));
  if (!object.is_object()) at.error("expected an object, got {}", json_type(object));
  Entry entry;
  entry.name = as_string(member(object, "name", at), kMaxNameBytes, at.at("name"));
  at = context.at(fmt::format("entry '{}'", entry.name));
  const std::string kind = as_string(member(object, "kind", at), 16, at.at("kind"));
  if (kind == "value") {
    expect_members(object, {"name", "kind", "type", "value"}, at);
    entry.content = as_value(member(object, "type", at), member(object, "value", at), at);
    return entry;
  }
  if (kind != "tensor") at.error("unknown kind \"{}\" (expected tensor or value)", kind);
  expect_members(object, {"name", "kind", "dtype", "shape", "sharding", "chunks"}, at);
  TensorEntry tensor;
  tensor.dtype = as_dtype(member(object, "dtype", at), at.at("dtype"));
  tensor.shape = as_dims(member(object, "shape", at), at.at("shape"));
  const std::string sharding = as_string(member(object, "sharding", at), 16, at.at("sharding"));
  if (sharding == "replicated") tensor.sharding = Sharding::Replicated;
  else if (sharding == "dim0") tensor.sharding = Sharding::Rows;
  else at.error("unknown sharding \"{}\" (expected replicated or dim0)", sharding);
  const json& chunks = as_array(member(object, "chunks", at), at.at("chunks"));
  for (size_t i = 0; i < chunks.size(); ++i)
    tensor.chunks.push_back(as_chunk(chunks[i], tensor.shape, at.at(fmt::format("chunk {}", i))));
  entry.content = std::move(tensor);
  return entry;
}

// Parses JSON refusing deep nesting and duplicate keys (a second "shape" must not silently win).
json parse_json(std::string_view text, const Context& context) {
  std::vector<std::set<std::string>> open_objects;
  auto callback = [&](int depth, json::parse_event_t event, json& parsed) {
    if (depth > kMaxJsonDepth) context.error("JSON nested deeper than {} levels", kMaxJsonDepth);
    if (event == json::parse_event_t::object_start) open_objects.emplace_back();
    else if (event == json::parse_event_t::object_end) open_objects.pop_back();
    else if (event == json::parse_event_t::key &&
             !open_objects.back().insert(parsed.get<std::string>()).second)
      context.error("duplicate key \"{}\"", parsed.get<std::string>());
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), callback);
  } catch (const json::exception& error) {
    context.error("not valid JSON: {}", error.what());
  }
}

void check_seal(std::string_view text, const Context& context) {
  const size_t trailer = kChecksumPrefix.size() + 16 + kChecksumSuffix.size();
  if (text.size() < trailer || text.substr(text.size() - kChecksumSuffix.size()) != kChecksumSuffix ||
      text.substr(text.size() - trailer, kChecksumPrefix.size()) != kChecksumPrefix)
    context.error("the manifest does not end with its checksum member (truncated or edited)");
  const std::string_view body = text.substr(0, text.size() - trailer);
  uint64_t expected;
  const std::string_view digits = text.substr(body.size() + kChecksumPrefix.size(), 16);
  if (!parse_checksum_hex(digits, &expected))
    context.error("manifest checksum \"{}\" is not 16 lowercase hex digits", digits);
  const uint64_t actual = checksum(body.data(), body.size());
  if (actual != expected)
    context.error("manifest checksum mismatch over bytes [0, {}): stored {}, computed {}",
                  body.size(), digits, checksum_hex(actual));
}

}  // namespace

Manifest parse_manifest(std::string_view text, std::string_view source, ParseOptions options) {
  const Context context{std::string(source)};
  if (text.size() > kMaxManifestBytes)
    context.error("manifest of {} bytes exceeds the limit of {}", text.size(), kMaxManifestBytes);
  if (options.verify_checksum) check_seal(text, context);
  const json root = parse_json(text, context);
  expect_members(root, {"format", "format_version", "world_size", "files", "entries",
                        "manifest_checksum"}, context);
  if (as_string(member(root, "format", context), 64, context.at("format")) != kFormatName)
    context.error("not an ember checkpoint manifest (format is {})", root["format"].dump());
  Manifest manifest;
  manifest.format_version = static_cast<int>(
      as_uint(member(root, "format_version", context), INT32_MAX, context.at("format_version")));
  if (manifest.format_version != kFormatVersion)
    context.error("format version {} is not supported (this build reads version {})",
                  manifest.format_version, kFormatVersion);
  manifest.world_size = static_cast<int>(
      as_uint(member(root, "world_size", context), kMaxWorldSize, context.at("world_size")));
  for (const json& file : as_array(member(root, "files", context), context.at("files"))) {
    const Context at = context.at(fmt::format("files[{}]", manifest.files.size()));
    expect_members(file, {"name", "size", "rank"}, at);
    manifest.files.push_back(DataFile{
        as_string(member(file, "name", at), 255, at.at("name")),
        as_uint(member(file, "size", at), INT64_MAX, at.at("size")),
        static_cast<int>(as_uint(member(file, "rank", at), kMaxWorldSize, at.at("rank")))});
  }
  const json& entries = as_array(member(root, "entries", context), context.at("entries"));
  for (size_t i = 0; i < entries.size(); ++i) manifest.entries.push_back(as_entry(entries[i], i, context));
  validate_manifest(manifest, source);
  return manifest;
}

}  // namespace ember::ckpt
