// Offline resharding: a checkpoint saved at N ranks rewritten as M ranks would save it, each of
// M simulated ranks reading only the bytes it writes: its rows (the same path a resharded load
// takes) and the replicated tensors it is the writer of.
#pragma once

#include <filesystem>

#include "ckpt/writer.h"

namespace ember::ckpt {

// Every sharded entry is split with even_rows() over `world_size` ranks; replicated entries stay
// replicated; values are copied. Returns the committed directory (options.root / options.name).
std::filesystem::path reshard(const std::filesystem::path& source, int world_size,
                              const SaveOptions& options);

// What rank `rank` of `world_size` writes in that layout: its even_rows() of every sharded entry,
// with data; every replicated entry declared, with data only where replicated_owners() makes this
// rank its writer; every value.
HostState reshard_rank_state(const class CheckpointReader& reader, int rank, int world_size);

}  // namespace ember::ckpt
