// Datasets and loops shared by the data tests.
#pragma once

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "runtime/ember.h"

namespace ember::data::testing {

// Sample i has target i and features {10 i, 10 i + 1, 10 i + 2}: every batch can be checked for
// rows that belong together.
inline TensorDataset numbered_dataset(int64_t samples) {
  std::vector<float> features;
  std::vector<int64_t> targets;
  for (int64_t i = 0; i < samples; ++i) {
    for (int j = 0; j < 3; ++j) features.push_back(static_cast<float>(10 * i + j));
    targets.push_back(i);
  }
  return TensorDataset(from_vector(features, {samples, 3}), from_vector(targets, {samples}, {.dtype = kInt64}));
}

// The targets of one pass over the loader, batch by batch, checking each batch's rows.
inline std::vector<std::vector<int64_t>> one_epoch(DataLoader& loader) {
  std::vector<std::vector<int64_t>> batches;
  for (auto& [x, y] : loader) {
    const auto targets = y.to_vector<int64_t>();
    const auto features = x.to_vector<float>();
    REQUIRE(x.sizes() == Dims{static_cast<int64_t>(targets.size()), 3});
    for (size_t row = 0; row < targets.size(); ++row) {
      REQUIRE(features[3 * row] == static_cast<float>(10 * targets[row]));
      REQUIRE(features[3 * row + 2] == static_cast<float>(10 * targets[row] + 2));
    }
    batches.push_back(targets);
  }
  return batches;
}

inline std::vector<int64_t> flatten(const std::vector<std::vector<int64_t>>& batches) {
  std::vector<int64_t> all;
  for (const auto& batch : batches) all.insert(all.end(), batch.begin(), batch.end());
  return all;
}

// A dataset whose sample `bad` throws, and which counts get_batch calls and can be slowed down.
class ProbeDataset : public Dataset {
 public:
  ProbeDataset(int64_t samples, int64_t bad, std::chrono::milliseconds delay = {})
      : inner_(numbered_dataset(samples)), bad_(bad), delay_(delay) {}
  int64_t size() const override { return inner_.size(); }
  Batch get_batch(std::span<const int64_t> indices) const override {
    calls_->fetch_add(1);
    std::this_thread::sleep_for(delay_);
    for (int64_t index : indices) check(index != bad_, "ProbeDataset: sample {} is corrupt", index);
    return inner_.get_batch(indices);
  }
  int64_t calls() const { return calls_->load(); }

 private:
  TensorDataset inner_;
  int64_t bad_;
  std::chrono::milliseconds delay_;
  std::shared_ptr<std::atomic<int64_t>> calls_ = std::make_shared<std::atomic<int64_t>>(0);
};

}  // namespace ember::data::testing
