// DataLoader: batches of a Dataset in the order of a Sampler, made in the calling thread or by
// prefetching worker threads, with a resumable (epoch, position) state.
//
//   ember::data::DataLoader loader(ember::data::TensorDataset(X, Y),
//                                  {.batch_size = 32, .shuffle = true, .num_workers = 2});
//   for (auto& [x, y] : loader) { ... }  // one pass is one epoch; the next pass is the next epoch
#pragma once

#include <concepts>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "runtime/data/dataset.h"
#include "runtime/data/sampler.h"

namespace ember::data {

class Prefetcher;

struct LoaderOptions {
  int64_t batch_size = 1;
  // A new permutation every epoch, a pure function of (seed, epoch): the same batches whatever
  // num_workers is and however the global generator is used elsewhere.
  bool shuffle = false;
  // 0: batches are made in the calling thread. N > 0: N threads make them ahead of time; batch k
  // is still delivered k-th.
  int num_workers = 0;
  // Batches in page-locked host memory when a CUDA device is usable (so to(cuda, true) returns
  // before the copy ends); without one, ordinary host memory.
  bool pin_memory = false;
  // Drop the last batch of an epoch when it has fewer than batch_size samples.
  bool drop_last = false;
  // Shuffle seed; empty: drawn once from the default CPU generator when the loader is made (so
  // ember::manual_seed makes it reproducible).
  std::optional<uint64_t> seed = std::nullopt;
  // Batches each worker may have ready or in progress ahead of the consumer.
  int prefetch_factor = 2;
};

// Where a loader is: `epoch` and how much of it was consumed. Restoring it with
// load_state_dict makes a loader yield the rest of that epoch, then the following epochs, exactly
// as the saved loader would have.
struct LoaderState {
  int64_t epoch = 0;
  int64_t batches_consumed = 0;  // batches of `epoch` already delivered
  int64_t samples_consumed = 0;  // samples in those batches
  int64_t seed = 0;              // the shuffle seed's bits
  int64_t dataset_size = 0;      // checked on restore: a different dataset is an error
  // With a sampler that splits epochs among ranks (DistributedSampler): samples of `epoch`
  // consumed by all ranks together, which lets a restore on another world size continue with
  // the unseen ones; -1 otherwise.
  int64_t global_samples_consumed = -1;

  std::map<std::string, int64_t> to_map() const;
  // Throws ember::Error naming a missing key.
  static LoaderState from_map(const std::map<std::string, int64_t>& values);
  friend bool operator==(const LoaderState&, const LoaderState&) = default;
};

class DataLoader {
 public:
  template <std::derived_from<Dataset> ConcreteDataset>
  explicit DataLoader(ConcreteDataset dataset, LoaderOptions options = {}, Where where = Where::current())
      : DataLoader(std::make_shared<ConcreteDataset>(std::move(dataset)), nullptr, options, where) {}
  DataLoader(std::shared_ptr<const Dataset> dataset, LoaderOptions options = {},
             Where where = Where::current())
      : DataLoader(std::move(dataset), nullptr, options, where) {}
  // A custom order: `sampler` replaces shuffle (which must then be false).
  DataLoader(std::shared_ptr<const Dataset> dataset, std::shared_ptr<const Sampler> sampler,
             LoaderOptions options = {}, Where where = Where::current());
  // Joins the workers, also mid-epoch.
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // An input iterator over the current epoch. Not reentrant: one loop at a time per loader.
  class Iterator {
   public:
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    Iterator() = default;
    Batch& operator*() const { return loader_->current_; }
    Batch* operator->() const { return &loader_->current_; }
    Iterator& operator++() {
      loader_->advance();
      return *this;
    }
    void operator++(int) { ++*this; }
    bool operator==(std::default_sentinel_t) const { return !loader_->has_current_; }

   private:
    friend class DataLoader;
    explicit Iterator(DataLoader* loader) : loader_(loader) {}
    DataLoader* loader_ = nullptr;
  };

  // Continues the current epoch where it stopped (after load_state_dict, or after a loop that
  // broke early); once an epoch is exhausted, the next begin() starts the next epoch.
  Iterator begin();
  std::default_sentinel_t end() const { return {}; }

  int64_t num_batches() const;  // batches per epoch
  int64_t epoch() const { return epoch_; }
  // Starts `epoch` from its first batch at the next begin().
  void set_epoch(int64_t epoch, Where where = Where::current());

  LoaderState state_dict() const;
  // Checks the state fits this loader (dataset size, batch size), then continues from it.
  void load_state_dict(const LoaderState& state, Where where = Where::current());

  const LoaderOptions& options() const { return options_; }
  const Dataset& dataset() const { return *dataset_; }
  const Sampler& sampler() const { return *sampler_; }

 private:
  void advance();           // delivers batch position_ into current_, or ends the epoch
  void stop_workers();      // drops the prefetcher and the epoch's cached order
  int64_t batches_of(int64_t samples) const;  // batches an epoch of `samples` makes (drop_last)
  // pin_memory asked for and a CUDA device usable (without one there is nothing to overlap).
  bool pins_batches() const { return options_.pin_memory && cuda_is_available(); }

  std::shared_ptr<const Dataset> dataset_;
  // The sampler epochs come from: base_sampler_, or base_sampler_->resumed() until the epoch a
  // restored state resumed mid-way is over (set_epoch and later epochs start from the base).
  std::shared_ptr<const Sampler> sampler_;
  std::shared_ptr<const Sampler> base_sampler_;
  bool own_sampler_;  // built from options (and rebuilt when a restored state brings its seed)
  LoaderOptions options_;
  uint64_t seed_;
  int64_t epoch_ = 0;
  int64_t position_ = 0;  // batches of epoch_ delivered
  std::shared_ptr<const std::vector<int64_t>> order_;  // epoch_'s indices, while it runs
  std::unique_ptr<Prefetcher> prefetcher_;
  Batch current_;
  bool has_current_ = false;
};

}  // namespace ember::data
