// Loading a checkpoint into live state on any number of ranks (resharding is the normal path): each
// rank reads the rows its live tensors hold, whatever layout the checkpoint was saved with.
#pragma once

#include <filesystem>

#include "ckpt/coordinator.h"
#include "ckpt/state.h"

namespace ember::ckpt {

struct LoadOptions {
  // Live entries the checkpoint lacks are skipped instead of failing the load.
  bool allow_missing = false;
};

struct LoadStats {
  uint64_t bytes_read = 0;    // data bytes this rank read (its rows, plus partial edge blocks)
  uint64_t bytes_loaded = 0;  // bytes copied into live tensors
};

// Collective: every rank calls it with its live state. Each live tensor must match its entry's
// dtype and global shape; each live value must have its entry's type. All of a rank's rows are read
// into fresh host buffers and verified, and all ranks agree that all succeeded, before any live
// tensor or value changes: a failed load leaves the live state of every rank untouched and throws
// the same error on every rank.
LoadStats load(Coordinator& coordinator, const std::filesystem::path& directory, RankState& live,
               const LoadOptions& options = {});

}  // namespace ember::ckpt
