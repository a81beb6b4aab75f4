// load(): plan against the manifest, read into a staging buffer, agree, then commit.
#include "ckpt/load.h"

#include <optional>

#include "ckpt/reader.h"
#include "ckpt/host_copy.h"
#include "runtime/memory/overlap.h"
#include "runtime/memory/storage.h"

namespace ember::ckpt {

namespace {

struct Staged {
  // All of this rank's staged rows in one block of the caching allocator, which keeps it for the
  // next load (fresh memory costs a page fault per 4 KiB, which dominates a warm load).
  std::shared_ptr<Storage> buffer;
  std::map<std::string, const std::byte*> tensors;  // each live tensor's rows in `buffer`
  std::map<std::string, Value> values;
};

constexpr uint64_t kStagingAlignment = 64;

void check_tensor_matches(const CheckpointReader& reader, const Entry& entry,
                          const LocalTensor& live) {
  const TensorEntry& saved = entry.tensor();
  const std::string where = fmt::format("checkpoint {}: entry '{}'", reader.directory().string(),
                                        entry.name);
  check(saved.dtype == live.tensor.dtype(), "{}: saved as {}, the live tensor is {}", where,
        dtype_name(saved.dtype), dtype_name(live.tensor.dtype()));
  check(saved.shape == live.global_shape, "{}: saved with global shape {}, the live tensor's is {}",
        where, saved.shape, live.global_shape);
  // What copy_ refuses: writing element by element, the last row would win without a word.
  check(!has_internal_overlap(live.tensor),
        "{}: the live tensor (shape {}, strides {}) is expanded: several of its elements share one address, so it "
        "cannot be loaded into; clone() it first", where, live.tensor.sizes(), live.tensor.strides());
}

Staged read_all(const CheckpointReader& reader, const RankState& live, const LoadOptions& options,
                LoadStats& stats) {
  Staged staged;
  for (const auto& [name, local] : live.tensors()) {
    const Entry* entry = reader.manifest().find(name);
    if (entry == nullptr && options.allow_missing) continue;
    check(entry != nullptr && entry->is_tensor(), "checkpoint {}: no tensor entry '{}'",
          reader.directory().string(), name);
    check_tensor_matches(reader, *entry, local);
  }
  for (const auto& [name, value] : live.values()) {
    const Entry* entry = reader.manifest().find(name);
    if (entry == nullptr && options.allow_missing) continue;
    check(entry != nullptr && !entry->is_tensor(), "checkpoint {}: no value entry '{}'",
          reader.directory().string(), name);
    check(entry->value().index() == value.index(),
          "checkpoint {}: value '{}' is saved as {}, the live value is {}",
          reader.directory().string(), name, value_type_name(entry->value()), value_type_name(value));
    staged.values[name] = entry->value();
  }
  // Every check passed: read what this rank needs, verifying checksums.
  uint64_t total = 0;
  for (const auto& [name, local] : live.tensors())
    if (reader.manifest().find(name) != nullptr)
      total += (local.tensor.nbytes() + kStagingAlignment - 1) / kStagingAlignment * kStagingAlignment;
  std::byte* cursor = nullptr;  // stays null when every staged tensor is empty
  if (total > 0) {
    staged.buffer = Storage::allocate(total, kCPU);
    cursor = static_cast<std::byte*>(staged.buffer->data());
  }
  for (const auto& [name, local] : live.tensors()) {
    const Entry* entry = reader.manifest().find(name);
    if (entry == nullptr) continue;
    reader.read_rows(*entry, local.rows(), cursor);
    staged.tensors[name] = cursor;
    stats.bytes_loaded += local.tensor.nbytes();
    if (local.tensor.nbytes() > 0)
      cursor += (local.tensor.nbytes() + kStagingAlignment - 1) / kStagingAlignment * kStagingAlignment;
  }
  stats.bytes_read = reader.bytes_read();
  return staged;
}

}  // namespace

LoadStats load(Coordinator& coordinator, const std::filesystem::path& directory, RankState& live,
               const LoadOptions& options) {
  LoadStats stats;
  std::optional<Staged> staged;
  std::string error;
  try {
    const CheckpointReader reader(directory);
    staged = read_all(reader, live, options, stats);
  } catch (const std::exception& failure) {
    error = failure.what();
  }
  error = agree_on_errors(coordinator, error);
  if (!error.empty()) fail("{}", error);

  // The commit: shapes and dtypes were checked, nothing below can fail.
  for (const auto& [name, bytes] : staged->tensors) scatter_bytes(bytes, live.tensor(name).tensor);
  for (auto& [name, value] : staged->values) live.value(name) = std::move(value);
  return stats;
}

}  // namespace ember::ckpt
