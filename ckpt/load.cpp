// load(): plan against the manifest, read into staging tensors, agree, then commit.
#include "ckpt/load.h"

#include <optional>

#include "ckpt/reader.h"
#include "ckpt/host_copy.h"

namespace ember::ckpt {

namespace {

struct Staged {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, Value> values;
};

void check_tensor_matches(const CheckpointReader& reader, const Entry& entry,
                          const LocalTensor& live) {
  const TensorEntry& saved = entry.tensor();
  const std::string where = fmt::format("checkpoint {}: entry '{}'", reader.directory().string(),
                                        entry.name);
  check(saved.dtype == live.tensor.dtype(), "{}: saved as {}, the live tensor is {}", where,
        dtype_name(saved.dtype), dtype_name(live.tensor.dtype()));
  check(saved.shape == live.global_shape, "{}: saved with global shape {}, the live tensor's is {}",
        where, saved.shape, live.global_shape);
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
  // Every check passed: start every read this rank needs, then read (verifying checksums).
  for (const auto& [name, local] : live.tensors())
    if (const Entry* entry = reader.manifest().find(name)) reader.prefetch(*entry, local.rows());
  for (const auto& [name, local] : live.tensors()) {
    if (reader.manifest().find(name) == nullptr) continue;
    Tensor tensor = reader.read(name, local.rows());
    stats.bytes_loaded += tensor.nbytes();
    staged.tensors[name] = std::move(tensor);
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
  for (auto& [name, tensor] : staged->tensors)
    scatter_bytes(static_cast<const std::byte*>(tensor.raw_data_ptr()), live.tensor(name).tensor);
  for (auto& [name, value] : staged->values) live.value(name) = std::move(value);
  return stats;
}

}  // namespace ember::ckpt
