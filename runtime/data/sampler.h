// Samplers: which dataset indices an epoch visits and in what order. The DataLoader batches
// whatever a Sampler returns, so other orders (a later DistributedSampler) plug in here.
#pragma once

#include <cstdint>
#include <memory>
#include <source_location>
#include <vector>

namespace ember::data {

class Sampler {
 public:
  virtual ~Sampler() = default;

  // The indices epoch `epoch` visits, in order. Must be a pure function of `epoch`: a loader
  // resumed mid-epoch recomputes the order and skips what was consumed.
  virtual std::vector<int64_t> epoch_indices(int64_t epoch) const = 0;
  // How many indices every epoch has.
  virtual int64_t size() const = 0;
  // How many indices `epoch` has: size(), except for an epoch a resharded sampler resumes
  // part-way (DistributedSampler).
  virtual int64_t epoch_size(int64_t epoch) const { return (void)epoch, size(); }

  // ---- resharding (samplers that split epochs among ranks) ----
  // Samples of `epoch` consumed by all ranks together when this one consumed `rank_samples`;
  // -1: this sampler does not split epochs among ranks.
  virtual int64_t global_samples_consumed(int64_t epoch, int64_t rank_samples) const {
    return (void)epoch, (void)rank_samples, -1;
  }
  // This sampler resumed at `global_consumed` samples into `epoch` (on its own world size);
  // null when it cannot be.
  virtual std::shared_ptr<const Sampler> resumed(int64_t epoch, int64_t global_consumed) const {
    return (void)epoch, (void)global_consumed, nullptr;
  }
};

// 0, 1, ..., size - 1 every epoch.
class SequentialSampler : public Sampler {
 public:
  explicit SequentialSampler(int64_t size, std::source_location where = std::source_location::current());
  std::vector<int64_t> epoch_indices(int64_t epoch) const override;
  int64_t size() const override { return size_; }

 private:
  int64_t size_;
};

// A fresh permutation of [0, size) every epoch, drawn from the Philox stream keyed by `seed` with
// the epoch as the stream number: independent of threads, workers and the global generator.
class RandomSampler : public Sampler {
 public:
  RandomSampler(int64_t size, uint64_t seed, std::source_location where = std::source_location::current());
  std::vector<int64_t> epoch_indices(int64_t epoch) const override;
  int64_t size() const override { return size_; }
  uint64_t seed() const { return seed_; }

 private:
  int64_t size_;
  uint64_t seed_;
};

// A Fisher-Yates permutation of [0, size) whose swaps come from Philox4x32-10 with key `seed` and
// counter (draw number, stream). The same (size, seed, stream) always gives the same permutation.
std::vector<int64_t> random_permutation(int64_t size, uint64_t seed, uint64_t stream);

}  // namespace ember::data
