// Saving a checkpoint: every rank writes its data file in parallel into a temporary directory,
// rank 0 gathers the chunk metadata, writes the manifest, syncs, and renames the directory into
// place; only then is `latest` updated. A checkpoint is complete or invisible.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "ckpt/coordinator.h"
#include "ckpt/state.h"

namespace ember::ckpt {

struct SaveOptions {
  std::filesystem::path root;  // holds the checkpoints and the `latest` pointer; created if absent;
                               // not empty ("." is the current directory)
  std::string name;            // the checkpoint's directory in root, e.g. step_name(step)
  int keep_last = 0;           // after the commit, keep the newest k step checkpoints (0: all);
                               // other saves' temporary directories are left alone
  bool durable = true;         // fsync files and directories; off only where a crash cannot matter
  bool update_latest = true;   // point root/latest at the new checkpoint after the commit
};

// "step_000000042": names that sort by step and that retention recognizes.
std::string step_name(int64_t step);

// A tensor's bytes in host memory, as one rank writes them.
struct HostTensor {
  std::string name;
  DType dtype = DType::Float32;
  Dims global_shape;
  Sharding sharding = Sharding::Replicated;
  RowRange rows;               // the global rows these bytes hold
  // Null for a replicated tensor that replicated_owners() gives another rank: declared, never
  // written by this rank (an offline reshard reads only the bytes its rank writes).
  const std::byte* data = nullptr;
  uint64_t bytes = 0;
};

struct HostState {
  std::vector<HostTensor> tensors;       // sorted by name
  std::map<std::string, Value> values;
  std::vector<Tensor> keep_alive;        // host copies made for device or strided tensors
  // Set when this rank could not produce its state: it still takes part in the save's collectives
  // so that every rank fails with this error instead of waiting forever.
  std::string error;
};

// A tensor's metadata as a HostTensor, without data yet.
HostTensor describe(const std::string& name, const LocalTensor& local);

// Refuses, on the rank that holds it, state that no reader would accept: entry names that are not
// 1 to kMaxNameBytes printable ASCII bytes, bool bytes other than 0 or 1. save() (through
// host_state) and AsyncCheckpointer::save_async run it on what they are about to write.
void check_host_state(const HostState& state);

// Which rank writes each replicated tensor of `state`: largest first, each to the least-loaded rank.
// Every rank computes the same answer from the same declarations (rank 0 checks they agree).
std::map<std::string, int> replicated_owners(const HostState& state, int world_size);

// Host views of a rank's tensors: CPU contiguous tensors are used in place, others are copied.
// Throws what check_host_state() refuses.
HostState host_state(const RankState& state);

// Collective: every rank of `coordinator` calls it with its own state. Returns the committed
// checkpoint directory on every rank, or throws the same error on every rank (after removing the
// temporary directory). Replicated tensors are spread over the ranks, largest first.
std::filesystem::path save(Coordinator& coordinator, const RankState& state,
                           const SaveOptions& options);
std::filesystem::path write_checkpoint(Coordinator& coordinator, const HostState& state,
                                       const SaveOptions& options);

}  // namespace ember::ckpt
