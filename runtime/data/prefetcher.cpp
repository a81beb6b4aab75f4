// Prefetcher: in-order delivery from a pool of worker threads with a bounded window.
#include "runtime/data/prefetcher.h"

#include <system_error>

#include "runtime/error.h"

namespace ember::data {

Prefetcher::Prefetcher(MakeBatch make_batch, int64_t first, int64_t end, int workers, int64_t capacity)
    : make_batch_(std::move(make_batch)), end_(end), capacity_(capacity), next_to_claim_(first),
      next_to_take_(first) {
  internal_assert(workers >= 1 && capacity >= 1 && first <= end, "Prefetcher: bad configuration");
  threads_.reserve(static_cast<size_t>(workers));
  for (int worker = 0; worker < workers; ++worker) {
    try {
      threads_.emplace_back([this] { work(); });
    } catch (const std::system_error& error) {
      // Out of threads or memory (a low pids limit, a huge num_workers): the workers already
      // running must be joined before this object unwinds, or ~thread would std::terminate.
      stop_workers();
      fail("DataLoader: could not start worker {} of {}: {} (try fewer num_workers)", worker + 1, workers,
           error.what());
    }
  }
}

Prefetcher::~Prefetcher() { stop_workers(); }

void Prefetcher::stop_workers() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  room_.notify_all();
  for (std::thread& thread : threads_) thread.join();
  threads_.clear();
}

void Prefetcher::work() {
  while (true) {
    int64_t number;
    {
      std::unique_lock lock(mutex_);
      // The window [next_to_take_, next_to_take_ + capacity_) bounds memory: a fast worker
      // cannot run ahead of a slow consumer by more than `capacity_` batches.
      room_.wait(lock, [&] {
        return stopping_ || next_to_claim_ >= end_ || next_to_claim_ < next_to_take_ + capacity_;
      });
      if (stopping_ || next_to_claim_ >= end_) return;
      number = next_to_claim_++;
    }
    Result result;
    try {
      result.batch = make_batch_(number);
    } catch (...) {
      result.error = std::current_exception();
    }
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
      results_.emplace(number, std::move(result));
    }
    ready_.notify_one();
  }
}

Batch Prefetcher::next() {
  internal_assert(next_to_take_ < end_, "Prefetcher::next called past the last batch");
  Result result;
  {
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [&] { return results_.contains(next_to_take_); });
    auto found = results_.find(next_to_take_);
    result = std::move(found->second);
    results_.erase(found);
    ++next_to_take_;
  }
  room_.notify_all();
  if (result.error) std::rethrow_exception(result.error);
  return std::move(result.batch);
}

}  // namespace ember::data
