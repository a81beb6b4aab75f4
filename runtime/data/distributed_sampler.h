// DistributedSampler: each rank's share of an epoch, like PyTorch's, with a position that
// survives a change of world size. A checkpoint saved on N ranks restores on M ranks and the M
// loaders continue with exactly the samples no rank has seen yet in that epoch.
//
//   auto sampler = std::make_shared<data::DistributedSampler>(dataset->size(), world, rank, seed);
//   data::DataLoader loader(dataset, sampler, {.batch_size = 32});
#pragma once

#include <memory>
#include <source_location>

#include "runtime/data/sampler.h"

namespace ember::data {

class DistributedSampler : public Sampler {
 public:
  // The epoch's global order (a Philox permutation of [0, dataset_size) when shuffle, else
  // 0, 1, ...) is padded by repeating its first indices to a multiple of world_size, and rank r
  // takes positions r, r + world_size, ... of it: every rank gets the same number of samples.
  DistributedSampler(int64_t dataset_size, int world_size, int rank, uint64_t seed, bool shuffle = true,
                     std::source_location where = std::source_location::current());

  std::vector<int64_t> epoch_indices(int64_t epoch) const override;
  int64_t size() const override { return (dataset_size_ + world_size_ - 1) / world_size_; }  // a whole epoch
  int64_t epoch_size(int64_t epoch) const override;

  // Samples of `epoch`'s global order consumed by all ranks together when this rank has consumed
  // `rank_samples` of its share (ranks advance in lockstep, so they all report the same).
  int64_t global_samples_consumed(int64_t epoch, int64_t rank_samples) const override;
  // A sampler for the same world and rank whose `epoch` skips the first `global_consumed`
  // samples of the global order and splits the rest; later epochs are whole.
  std::shared_ptr<const Sampler> resumed(int64_t epoch, int64_t global_consumed) const override;

  int world_size() const { return world_size_; }
  int rank() const { return rank_; }

 private:
  std::vector<int64_t> global_order(int64_t epoch) const;
  int64_t skipped(int64_t epoch) const { return epoch == resume_epoch_ ? resume_offset_ : 0; }

  int64_t dataset_size_;
  int world_size_;
  int rank_;
  uint64_t seed_;
  bool shuffle_;
  int64_t resume_epoch_ = -1;  // the epoch that starts part-way, if any
  int64_t resume_offset_ = 0;  // global samples of resume_epoch_ consumed before the restore
};

}  // namespace ember::data
