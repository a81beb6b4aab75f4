// reshard(): M threads, each reading its rows of every entry, then one collective save.
#include "ckpt/reshard.h"

#include "ckpt/reader.h"

namespace ember::ckpt {

RankState rank_state_from(const CheckpointReader& reader, int rank, int world_size) {
  RankState state;
  for (const Entry& entry : reader.manifest().entries) {
    if (!entry.is_tensor()) {
      state.add_value(entry.name, entry.value());
      continue;
    }
    const TensorEntry& tensor = entry.tensor();
    if (tensor.sharding == Sharding::Replicated) {
      state.add_replicated(entry.name, reader.read(entry.name));
    } else {
      const RowRange rows = even_rows(tensor.rows(), rank, world_size);
      state.add_rows(entry.name, reader.read(entry.name, rows), tensor.shape, rows.begin);
    }
  }
  return state;
}

std::filesystem::path reshard(const std::filesystem::path& source, int world_size,
                              const SaveOptions& options) {
  check(world_size >= 1, "reshard: world size must be at least 1, got {}", world_size);
  std::filesystem::path result;
  run_ranks(world_size, [&](Coordinator& coordinator) {
    HostState host;
    RankState state;
    try {
      const CheckpointReader reader(source);
      state = rank_state_from(reader, coordinator.rank(), world_size);
      host = host_state(state);
    } catch (const std::exception& error) {
      host.error = error.what();  // still take part, so every rank fails together
    }
    const std::filesystem::path committed = write_checkpoint(coordinator, host, options);
    if (coordinator.rank() == 0) result = committed;
  });
  return result;
}

}  // namespace ember::ckpt
