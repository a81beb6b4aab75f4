// Asynchronous save: save_async() copies the state into reusable host buffers (the snapshot),
// then a background thread writes the checkpoint while training continues. Training may change
// its tensors as soon as save_async() returns; the checkpoint holds the values at the call.
#pragma once

#include <condition_variable>
#include <deque>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>

#include "ckpt/coordinator.h"
#include "ckpt/writer.h"

namespace ember::ckpt {

// Host buffers for snapshots, reused between saves: at most `max_buffers` exist, each grown to the
// largest state it has held. On CUDA these will be pinned; on the CPU they are plain memory.
class HostBufferPool {
 public:
  struct Buffer {
    std::unique_ptr<std::byte[]> data;
    size_t capacity = 0;
  };

  explicit HostBufferPool(size_t max_buffers);
  // A buffer of at least `bytes`; blocks while all `max_buffers` are lent out.
  std::unique_ptr<Buffer> acquire(size_t bytes);
  void release(std::unique_ptr<Buffer> buffer);
  size_t allocated_bytes() const;  // capacity of the buffers not lent out right now

 private:
  mutable std::mutex mutex_;
  std::condition_variable returned_;
  std::vector<std::unique_ptr<Buffer>> free_;
  size_t created_ = 0;
  size_t max_buffers_;
};

// The result of one asynchronous save. wait() returns the committed directory or rethrows the
// save's error; always wait() so that a failed save is not missed.
class SaveFuture {
 public:
  SaveFuture() = default;
  explicit SaveFuture(std::shared_future<std::filesystem::path> result) : result_(std::move(result)) {}
  std::filesystem::path wait() const { return result_.get(); }
  bool ready() const;
  bool valid() const { return result_.valid(); }

 private:
  std::shared_future<std::filesystem::path> result_;
};

struct AsyncSaveStats {
  double wait_seconds = 0;      // waiting for an earlier save to leave room
  double snapshot_seconds = 0;  // copying tensors into the host buffer
  double blocking_seconds = 0;  // the whole save_async() call
  size_t snapshot_bytes = 0;
};

class AsyncCheckpointer {
 public:
  // `coordinator` is used from the background thread, for this checkpointer's saves only: give it
  // a group of its own (in a real job: a separate communicator), not one used for training.
  // `max_in_flight` (>= 1): saves queued or writing at once; one more save_async() waits for room.
  explicit AsyncCheckpointer(Coordinator& coordinator, size_t max_in_flight = 1, Where where = Where::current());
  // Waits for the saves in flight; their errors stay in their futures.
  ~AsyncCheckpointer();
  AsyncCheckpointer(const AsyncCheckpointer&) = delete;
  AsyncCheckpointer& operator=(const AsyncCheckpointer&) = delete;

  // Collective like save(): every rank calls it with its state, in the same order. Waits while
  // max_in_flight saves are still writing, snapshots `state`, queues the write and returns. What
  // save() refuses (check_host_state) fails the save on every rank, from wait().
  SaveFuture save_async(const RankState& state, const SaveOptions& options);
  // For a rank that could not even build its state (`error` says why): it still takes part in the
  // save's collectives, in its place among the saves, so that every rank's wait() throws the error
  // instead of the other ranks waiting for it forever.
  SaveFuture save_async_failed(std::string error, const SaveOptions& options);
  // Blocks until every queued save has finished (successfully or not).
  void wait_all();

  const AsyncSaveStats& last_stats() const { return stats_; }
  const HostBufferPool& pool() const { return pool_; }
  // The group this checkpointer saves with (its rank and world size are the save's).
  const Coordinator& coordinator() const { return coordinator_; }

 private:
  struct Job;
  void wait_for_room();
  SaveFuture enqueue(std::unique_ptr<Job> job);
  void run();

  Coordinator& coordinator_;
  size_t max_in_flight_;
  HostBufferPool pool_;
  AsyncSaveStats stats_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::unique_ptr<Job>> queue_;
  size_t in_flight_ = 0;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace ember::ckpt
