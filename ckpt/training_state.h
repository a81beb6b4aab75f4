// The full training state of one rank (model, optimizer, scheduler, loss scaler, data loader, RNG,
// step, configuration, extra typed values) as one checkpoint: the entry names
// are listed in ckpt/FORMAT.md. Save and restore are collective over the ranks of a Coordinator.
//
//   ckpt::TrainingState state{.model = model.ptr().get(), .optimizer = &adam, ...};
//   ckpt::save_training_state(coordinator, state, {.root = "ckpts", .name = ckpt::step_name(step)});
//   ...in a new process, possibly with another world size:
//   ckpt::load_training_state(coordinator, *ckpt::latest_checkpoint("ckpts"), state);
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ckpt/async_save.h"
#include "ckpt/coordinator.h"
#include "ckpt/writer.h"
#include "runtime/amp/grad_scaler.h"
#include "runtime/data/dataloader.h"
#include "runtime/nn/module.h"
#include "runtime/optim/lr_scheduler.h"
#include "runtime/optim/optimizer.h"
#include "runtime/random/generator.h"

namespace ember::ckpt {

// Pointers to the parts of a run; null parts are not saved or restored. The model and optimizer
// state are replicated on every rank (each rank saves an even share of every tensor's rows, so
// all ranks write in parallel); sharded models (FSDP) will declare their own row ranges.
struct TrainingState {
  nn::Module* model = nullptr;
  optim::Optimizer* optimizer = nullptr;
  optim::LRScheduler* scheduler = nullptr;
  amp::GradScaler* scaler = nullptr;  // mixed precision's loss scaler
  data::DataLoader* loader = nullptr;
  // Generators by device name ("cpu", "cuda:0"): saved per rank.
  std::vector<std::pair<std::string, Generator*>> generators;
  int64_t step = 0;
  std::string config;                  // the run's configuration, e.g. JSON text
  std::map<std::string, Value> extra;  // e.g. {"ema_decay", 0.999}
};

// This rank's entries of `state` for a save by `world_size` ranks (views, not copies). Refuses a rank
// outside [0, world_size).
RankState training_rank_state(const TrainingState& state, int rank, int world_size);

// Collective save of every rank's training state.
std::filesystem::path save_training_state(Coordinator& coordinator, const TrainingState& state,
                                          const SaveOptions& options);
// The same, snapshotting into the checkpointer's host buffers and writing in the background.
// `rank` and `world_size` must be the checkpointer's coordinator's: the per-rank rows (RNG, loader)
// are stored under `rank`, so a wrong one would silently swap the ranks' states. Any refusal
// (these, or a state that cannot be described) reaches every rank's wait(), naming this call.
SaveFuture save_training_state_async(AsyncCheckpointer& checkpointer, int rank, int world_size,
                                     const TrainingState& state, const SaveOptions& options,
                                     Where where = Where::current());

struct RestoreReport {
  // The world size that saved the training state (train.world_size): an offline reshard changes
  // the checkpoint's layout, not this, nor the per-rank rows it numbers.
  int saved_world_size = 0;
  // The saved rank whose loader and generator states this rank took: its own rank when the world
  // size is unchanged, else rank % saved_world_size (see FORMAT.md).
  int source_rank = 0;
  uint64_t bytes_read = 0;
};

// Collective restore into every part `state` points at, on any world size. Everything is read and
// verified, and all ranks agree, before anything changes; the parts are then updated in order, and
// if any part of any rank refuses its state (a shape or key mismatch), every part already updated
// on every rank is put back: a failed restore leaves the whole training state as it was. Checkpoint
// entries for parts `state` does not point at are ignored; a model entry the model lacks, or a
// model tensor the checkpoint lacks, is an error.
RestoreReport load_training_state(Coordinator& coordinator, const std::filesystem::path& directory,
                                  TrainingState& state);

}  // namespace ember::ckpt
