// Offline resharding: a checkpoint saved at N ranks rewritten as M ranks would save it, each of
// M simulated ranks reading only its rows (the same path a resharded load takes).
#pragma once

#include <filesystem>

#include "ckpt/writer.h"

namespace ember::ckpt {

// Every sharded entry is split with even_rows() over `world_size` ranks; replicated entries stay
// replicated; values are copied. Returns the committed directory (options.root / options.name).
std::filesystem::path reshard(const std::filesystem::path& source, int world_size,
                              const SaveOptions& options);

// The whole checkpoint as rank `rank` of `world_size` would hold it in that layout.
RankState rank_state_from(const class CheckpointReader& reader, int rank, int world_size);

}  // namespace ember::ckpt
