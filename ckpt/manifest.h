// The checkpoint manifest: what a checkpoint directory holds (ckpt/FORMAT.md is the reference),
// its JSON serialization with a self-checksum, and the parser that validates untrusted text.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "runtime/dims.h"
#include "runtime/dtype.h"

namespace ember::ckpt {

constexpr int kFormatVersion = 1;
constexpr std::string_view kFormatName = "ember-checkpoint";
constexpr std::string_view kManifestFileName = "manifest.json";
// The reader's limits. The writer checks them before it commits, so that every checkpoint it
// commits can be read back.
// A manifest is read whole before anything is validated, so its size bounds parser memory.
constexpr uint64_t kMaxManifestBytes = 64ull << 20;
constexpr size_t kMaxNameBytes = 4096;  // an entry name
constexpr int kMaxWorldSize = 1 << 20;  // saving ranks

// How a tensor is laid out across the saving ranks.
enum class Sharding : uint8_t {
  Replicated,  // every rank holds all of it; written once
  Rows,        // split along dim 0 ("dim0" in the manifest); a rank holds a contiguous row range
};
std::string_view sharding_name(Sharding sharding);

// A typed small value: scheduler fields, step, loader position, configuration. Never code.
using Value = std::variant<bool, int64_t, uint64_t, double, std::string, std::vector<int64_t>,
                           std::vector<double>>;
std::string_view value_type_name(const Value& value);
std::string value_to_string(const Value& value);  // for inspect/diff

// A contiguous byte range of one data file holding rows [row_begin, row_begin + rows) of a tensor.
struct Chunk {
  std::string file;
  uint64_t offset = 0;
  uint64_t length = 0;
  int64_t row_begin = 0;
  int64_t rows = 0;
  // XXH3-64 of each `block_bytes` piece of the chunk (the last may be shorter), so a rank that
  // needs part of a chunk verifies only the blocks it touches.
  uint64_t block_bytes = 0;
  std::vector<uint64_t> checksums;
};

struct TensorEntry {
  DType dtype = DType::Float32;
  Dims shape;
  Sharding sharding = Sharding::Replicated;
  std::vector<Chunk> chunks;  // sorted by row_begin once validated

  // A 0-d tensor counts as one row; otherwise rows are dim 0 and a row is the rest.
  int64_t rows() const { return shape.empty() ? 1 : shape[0]; }
  uint64_t row_bytes() const;
  uint64_t total_bytes() const { return static_cast<uint64_t>(rows()) * row_bytes(); }
};

struct Entry {
  std::string name;
  std::variant<TensorEntry, Value> content;

  bool is_tensor() const { return std::holds_alternative<TensorEntry>(content); }
  const TensorEntry& tensor() const;  // throws ember::Error naming the entry if it is a value
  const Value& value() const;
};

struct DataFile {
  std::string name;
  uint64_t size = 0;
  int rank = 0;
};

struct Manifest {
  int format_version = kFormatVersion;
  int world_size = 1;
  std::vector<DataFile> files;
  std::vector<Entry> entries;  // sorted by name

  const Entry* find(std::string_view name) const;  // null when absent
  const DataFile* find_file(std::string_view name) const;
};

// The manifest as sealed JSON text: its last member is "manifest_checksum", the XXH3-64 of every
// byte before that member (see FORMAT.md).
std::string serialize_manifest(const Manifest& manifest);

// Appends the checksum member to `body`: a JSON object's text without its closing brace. Tools and
// tests that edit a manifest re-seal it with this.
std::string seal_manifest_text(std::string body);

struct ParseOptions {
  bool verify_checksum = true;  // off only for fuzzing the structural checks
};

// Parses and validates manifest text. `source` (a path) starts every error message. Rejects,
// before anything is allocated from the manifest's numbers: a bad or missing checksum, malformed
// or deeply nested JSON, unknown versions, dtypes or kinds, duplicate names, unsafe file names,
// negative/huge dims, sizes that overflow, chunks outside their file, overlapping byte ranges,
// rows covered twice or not at all, and dtype/shape/length disagreements.
Manifest parse_manifest(std::string_view text, std::string_view source, ParseOptions options = {});

// Validates a Manifest built in memory (the writer checks its own output before committing).
void validate_manifest(Manifest& manifest, std::string_view source);

// The checks a data file name must pass: a plain name inside the checkpoint directory.
void check_file_name(std::string_view name, std::string_view source);

// The checks an entry name must pass: 1 to kMaxNameBytes printable ASCII bytes. Messages show
// other bytes escaped (\xe9), so that they stay valid UTF-8 wherever they travel.
void check_entry_name(std::string_view name, std::string_view source);

}  // namespace ember::ckpt
