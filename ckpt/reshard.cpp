// reshard(): M threads, each reading the bytes it writes, then one collective save.
#include "ckpt/reshard.h"

#include "ckpt/reader.h"

namespace ember::ckpt {

HostState reshard_rank_state(const CheckpointReader& reader, int rank, int world_size) {
  HostState host;
  for (const Entry& entry : reader.manifest().entries) {
    if (!entry.is_tensor()) {
      host.values[entry.name] = entry.value();
      continue;
    }
    const TensorEntry& tensor = entry.tensor();
    const RowRange rows = tensor.sharding == Sharding::Replicated ? RowRange{0, tensor.rows()}
                                                                   : even_rows(tensor.rows(), rank, world_size);
    host.tensors.push_back(HostTensor{entry.name, tensor.dtype, tensor.shape, tensor.sharding, rows, nullptr,
                                      static_cast<uint64_t>(rows.size()) * tensor.row_bytes()});
  }
  // Every rank declares every replicated tensor, but only its owner's bytes are read: M ranks each
  // holding a full copy would need M times the memory of the replicated state.
  const std::map<std::string, int> owners = replicated_owners(host, world_size);
  for (HostTensor& tensor : host.tensors) {
    const bool replicated = tensor.sharding == Sharding::Replicated;
    if (replicated && owners.at(tensor.name) != rank) continue;
    Tensor bytes = reader.read(tensor.name, replicated ? std::nullopt : std::optional<RowRange>(tensor.rows));
    tensor.data = static_cast<const std::byte*>(bytes.raw_data_ptr());
    host.keep_alive.push_back(std::move(bytes));
  }
  check_host_state(host);
  return host;
}

std::filesystem::path reshard(const std::filesystem::path& source, int world_size,
                              const SaveOptions& options) {
  check(world_size >= 1, "reshard: world size must be at least 1, got {}", world_size);
  std::filesystem::path result;
  run_ranks(world_size, [&](Coordinator& coordinator) {
    HostState host;
    try {
      const CheckpointReader reader(source);
      host = reshard_rank_state(reader, coordinator.rank(), world_size);
    } catch (const std::exception& error) {
      host = HostState{};
      host.error = error.what();  // still take part, so every rank fails together
    }
    const std::filesystem::path committed = write_checkpoint(coordinator, host, options);
    if (coordinator.rank() == 0) result = committed;
  });
  return result;
}

}  // namespace ember::ckpt
