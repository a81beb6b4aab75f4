// DistributedSampler: per-rank shares of an epoch's global order, resumable on another world size.
#include "runtime/data/distributed_sampler.h"

#include <numeric>

#include "runtime/error.h"

namespace ember::data {

DistributedSampler::DistributedSampler(int64_t dataset_size, int world_size, int rank, uint64_t seed, bool shuffle,
                                       std::source_location where)
    : dataset_size_(dataset_size), world_size_(world_size), rank_(rank), seed_(seed), shuffle_(shuffle) {
  CallSiteScope site(where);
  check(dataset_size >= 0, "DistributedSampler: dataset size must be non-negative, got {}", dataset_size);
  check(world_size >= 1, "DistributedSampler: world_size must be at least 1, got {}", world_size);
  check(rank >= 0 && rank < world_size, "DistributedSampler: rank {} is outside [0, {})", rank, world_size);
}

std::vector<int64_t> DistributedSampler::global_order(int64_t epoch) const {
  check(epoch >= 0, "DistributedSampler: epoch must be non-negative, got {}", epoch);
  if (shuffle_) return random_permutation(dataset_size_, seed_, static_cast<uint64_t>(epoch));
  std::vector<int64_t> order(static_cast<size_t>(dataset_size_));
  std::iota(order.begin(), order.end(), int64_t{0});
  return order;
}

int64_t DistributedSampler::epoch_size(int64_t epoch) const {
  const int64_t remaining = dataset_size_ - skipped(epoch);
  return (remaining + world_size_ - 1) / world_size_;
}

std::vector<int64_t> DistributedSampler::epoch_indices(int64_t epoch) const {
  const std::vector<int64_t> order = global_order(epoch);
  const int64_t start = skipped(epoch);
  const int64_t share = epoch_size(epoch);
  std::vector<int64_t> indices;
  indices.reserve(static_cast<size_t>(share));
  for (int64_t k = 0; k < share; ++k) {
    // Past the order's end the padding wraps to its first samples, like PyTorch; a resumed
    // epoch on the same world size therefore pads exactly as the uninterrupted one did.
    const int64_t position = start + rank_ + k * world_size_;
    indices.push_back(order[static_cast<size_t>(position % dataset_size_)]);
  }
  return indices;
}

int64_t DistributedSampler::global_samples_consumed(int64_t epoch, int64_t rank_samples) const {
  check(rank_samples >= 0 && rank_samples <= epoch_size(epoch),
        "DistributedSampler: {} samples consumed is outside this rank's share [0, {}] of epoch {}",
        rank_samples, epoch_size(epoch), epoch);
  // Padding repeats samples at the very end: count no more than the epoch has.
  return std::min(dataset_size_, skipped(epoch) + rank_samples * world_size_);
}

std::shared_ptr<const Sampler> DistributedSampler::resumed(int64_t epoch, int64_t global_consumed) const {
  check(epoch >= 0, "DistributedSampler: epoch must be non-negative, got {}", epoch);
  check(global_consumed >= 0 && global_consumed <= dataset_size_,
        "DistributedSampler: {} samples consumed is outside [0, {}] (the dataset's size)", global_consumed,
        dataset_size_);
  auto copy = std::make_shared<DistributedSampler>(*this);
  copy->resume_epoch_ = epoch;
  copy->resume_offset_ = global_consumed;
  return copy;
}

}  // namespace ember::data
