// DataLoader: epoch bookkeeping, the in-thread and prefetching paths, and the resumable state.
#include "runtime/data/dataloader.h"

#include <algorithm>
#include <bit>

#include "runtime/data/prefetcher.h"
#include "runtime/random/generator.h"

namespace ember::data {

namespace {

// The samples of batch `batch_number` of an epoch visiting `order`.
// With `pin`, in page-locked memory (made in the worker when there are workers, as PyTorch's
// pinning thread does), so the training loop's to(cuda, true) overlaps the copy.
Batch make_batch(const Dataset& dataset, const std::vector<int64_t>& order, int64_t batch_size,
                 int64_t batch_number, bool pin) {
  const int64_t start = batch_number * batch_size;
  const int64_t count = std::min(batch_size, static_cast<int64_t>(order.size()) - start);
  Batch batch = dataset.get_batch(std::span<const int64_t>(order.data() + start, static_cast<size_t>(count)));
  if (pin) {
    batch.data = batch.data.pin_memory();
    if (batch.target.defined()) batch.target = batch.target.pin_memory();  // a dataset may have none
  }
  return batch;
}

uint64_t draw_seed() {
  Generator& generator = default_generator(kCPU);
  return (uint64_t{generator.next_word()} << 32) | generator.next_word();
}

}  // namespace

// ---- LoaderState ----

std::map<std::string, int64_t> LoaderState::to_map() const {
  return {{"epoch", epoch},
          {"batches_consumed", batches_consumed},
          {"samples_consumed", samples_consumed},
          {"seed", seed},
          {"dataset_size", dataset_size},
          {"global_samples_consumed", global_samples_consumed}};
}

LoaderState LoaderState::from_map(const std::map<std::string, int64_t>& values) {
  auto field = [&](const std::string& key) {
    auto found = values.find(key);
    check(found != values.end(), "LoaderState::from_map: missing key '{}'", key);
    return found->second;
  };
  LoaderState state{field("epoch"), field("batches_consumed"), field("samples_consumed"), field("seed"),
                    field("dataset_size")};
  // Optional: states saved before resharding existed lack it.
  if (auto found = values.find("global_samples_consumed"); found != values.end())
    state.global_samples_consumed = found->second;
  return state;
}

// ---- DataLoader ----

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, std::shared_ptr<const Sampler> sampler,
                       LoaderOptions options, Where where)
    : dataset_(std::move(dataset)), sampler_(std::move(sampler)), own_sampler_(sampler_ == nullptr),
      options_(options) {
  CallSiteScope site(where);
  check(dataset_ != nullptr, "DataLoader: the dataset is null");
  check(options.batch_size >= 1, "DataLoader: batch_size must be at least 1, got {}", options.batch_size);
  check(options.num_workers >= 0, "DataLoader: num_workers must be non-negative, got {}",
        options.num_workers);
  check(options.prefetch_factor >= 1, "DataLoader: prefetch_factor must be at least 1, got {}",
        options.prefetch_factor);
  check(own_sampler_ || !options.shuffle,
        "DataLoader: shuffle=true conflicts with a custom sampler (the sampler sets the order)");
  seed_ = options.seed ? *options.seed : draw_seed();
  if (own_sampler_) {
    if (options.shuffle) {
      sampler_ = std::make_shared<RandomSampler>(dataset_->size(), seed_);
    } else {
      sampler_ = std::make_shared<SequentialSampler>(dataset_->size());
    }
  }
  base_sampler_ = sampler_;
}

DataLoader::~DataLoader() = default;  // ~Prefetcher joins the workers

int64_t DataLoader::num_batches() const { return batches_of(sampler_->epoch_size(epoch_)); }

int64_t DataLoader::batches_of(int64_t samples) const {
  const int64_t whole = samples / options_.batch_size;
  // Not (samples + batch_size - 1) / batch_size: a batch size near INT64_MAX ("the whole dataset
  // in one batch") would overflow.
  return options_.drop_last || samples % options_.batch_size == 0 ? whole : whole + 1;
}

DataLoader::Iterator DataLoader::begin() {
  // A state saved after an epoch's last batch (position == num_batches) resumes with the next.
  if (position_ >= num_batches() && num_batches() > 0) {
    stop_workers();
    sampler_ = base_sampler_;  // a resumed epoch is over
    ++epoch_;
    position_ = 0;
  }
  advance();
  return Iterator(this);
}

void DataLoader::advance() {
  const int64_t batches = num_batches();
  if (position_ >= batches) {  // the epoch is over: the next begin() starts the next one
    stop_workers();
    current_ = {};
    has_current_ = false;
    sampler_ = base_sampler_;  // a resumed epoch is over
    ++epoch_;
    position_ = 0;
    return;
  }
  if (order_ == nullptr) {
    order_ = std::make_shared<const std::vector<int64_t>>(sampler_->epoch_indices(epoch_));
    // The batch count comes from epoch_size(): a sampler whose list disagrees would have batches
    // read past its end (or silently drop samples).
    const int64_t listed = static_cast<int64_t>(order_->size());
    const int64_t claimed = sampler_->epoch_size(epoch_);
    if (listed != claimed) {
      order_.reset();
      fail("DataLoader: the sampler's epoch_indices({}) lists {} samples but its epoch_size({}) is {}", epoch_,
           listed, epoch_, claimed);
    }
    if (options_.num_workers > 0) {
      auto job = [dataset = dataset_, order = order_, batch_size = options_.batch_size,
                  pin = pins_batches()](int64_t number) { return make_batch(*dataset, *order, batch_size, number, pin); };
      prefetcher_ = std::make_unique<Prefetcher>(std::move(job), position_, batches, options_.num_workers,
                                                 int64_t{options_.num_workers} * options_.prefetch_factor);
    }
  }
  try {
    current_ = prefetcher_ ? prefetcher_->next()
                           : make_batch(*dataset_, *order_, options_.batch_size, position_, pins_batches());
  } catch (...) {
    // The failed batch stays unconsumed: state_dict() still points at it.
    stop_workers();
    current_ = {};
    has_current_ = false;
    throw;
  }
  has_current_ = true;
  ++position_;
}

void DataLoader::stop_workers() {
  prefetcher_.reset();
  order_.reset();
}

void DataLoader::set_epoch(int64_t epoch, Where where) {
  CallSiteScope site(where);
  check(epoch >= 0, "DataLoader::set_epoch: epoch must be non-negative, got {}", epoch);
  stop_workers();
  current_ = {};
  has_current_ = false;
  sampler_ = base_sampler_;  // the whole epoch, also the one a restored state resumed mid-way
  epoch_ = epoch;
  position_ = 0;
}

LoaderState DataLoader::state_dict() const {
  const int64_t samples = std::min(position_ * options_.batch_size, sampler_->epoch_size(epoch_));
  LoaderState state{epoch_, position_, samples, std::bit_cast<int64_t>(seed_), dataset_->size()};
  state.global_samples_consumed = sampler_->global_samples_consumed(epoch_, samples);
  return state;
}

void DataLoader::load_state_dict(const LoaderState& state, Where where) {
  CallSiteScope site(where);
  check(state.dataset_size == dataset_->size(),
        "DataLoader::load_state_dict: the state is for a dataset of {} samples, this loader has {}",
        state.dataset_size, dataset_->size());
  check(state.epoch >= 0, "DataLoader::load_state_dict: epoch must be non-negative, got {}", state.epoch);
  // A sampler that splits epochs among ranks resumes from the global position, whatever world
  // size saved it: this rank then gets its share of the samples no rank has seen.
  if (state.global_samples_consumed >= 0) {
    if (std::shared_ptr<const Sampler> resumed = base_sampler_->resumed(state.epoch, state.global_samples_consumed)) {
      stop_workers();
      current_ = {};
      has_current_ = false;
      sampler_ = std::move(resumed);
      epoch_ = state.epoch;
      position_ = 0;
      // Saved at the epoch's last batch: nothing of it is left, so resume with the next epoch, as
      // begin() does for a position at the end (it cannot tell an epoch resumed empty from one
      // that is empty by itself, such as an empty dataset's).
      if (num_batches() == 0 && state.global_samples_consumed > 0) ++epoch_;
      return;
    }
  }
  // Epoch state.epoch of the loader's own sampler (not of one resumed from an earlier state).
  const int64_t epoch_samples = base_sampler_->epoch_size(state.epoch);
  check(state.batches_consumed >= 0 && state.batches_consumed <= batches_of(epoch_samples),
        "DataLoader::load_state_dict: batches_consumed {} is outside [0, {}] (batches per epoch)",
        state.batches_consumed, batches_of(epoch_samples));
  const int64_t samples = std::min(state.batches_consumed * options_.batch_size, epoch_samples);
  check(state.samples_consumed == samples,
        "DataLoader::load_state_dict: {} samples in {} batches does not match batch_size {} (expected {} "
        "samples); resume with the batch size the state was saved with",
        state.samples_consumed, state.batches_consumed, options_.batch_size, samples);
  stop_workers();
  current_ = {};
  has_current_ = false;
  seed_ = std::bit_cast<uint64_t>(state.seed);
  if (own_sampler_ && options_.shuffle) base_sampler_ = std::make_shared<RandomSampler>(dataset_->size(), seed_);
  sampler_ = base_sampler_;
  epoch_ = state.epoch;
  position_ = state.batches_consumed;
}

}  // namespace ember::data
