// Prefetcher: worker threads that make batches first..end-1 ahead of the consumer and hand them
// over strictly in order, holding at most `capacity` finished or in-progress batches at a time.
// Internal to the DataLoader.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/data/dataset.h"

namespace ember::data {

class Prefetcher {
 public:
  using MakeBatch = std::function<Batch(int64_t batch_number)>;

  // Starts `workers` threads making batches [first, end) with `make_batch`, which must be
  // thread-safe. At most `capacity` batches are claimed but not yet taken by next(). Throws
  // ember::Error, with no thread left running, when a worker thread cannot be started.
  Prefetcher(MakeBatch make_batch, int64_t first, int64_t end, int workers, int64_t capacity);
  // Stops the workers and joins them; a batch being made is finished and dropped.
  ~Prefetcher();
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  // Batch number `next_to_take`, waiting for it if needed; the exception it threw, if any, is
  // rethrown here. Must not be called past `end`.
  Batch next();

 private:
  struct Result {
    Batch batch;
    std::exception_ptr error;
  };
  void work();
  // Tells the workers to stop and joins them (a batch being made is finished and dropped).
  void stop_workers();

  MakeBatch make_batch_;
  const int64_t end_;
  const int64_t capacity_;
  std::mutex mutex_;
  std::condition_variable ready_;    // a result arrived (consumer waits)
  std::condition_variable room_;     // a result was taken or stopping (workers wait)
  std::map<int64_t, Result> results_;  // finished batches not yet taken, by batch number
  int64_t next_to_claim_;
  int64_t next_to_take_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace ember::data
