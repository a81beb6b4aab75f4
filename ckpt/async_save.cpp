// AsyncCheckpointer: snapshot on the caller's thread, write on one background thread per rank.
#include "ckpt/async_save.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "ckpt/host_copy.h"

namespace ember::ckpt {

namespace {
double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
constexpr int kWriterNice = 5;
constexpr size_t kAlignment = 64;  // each tensor starts on a cache line of the buffer
size_t align_up(size_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

size_t checked_max_in_flight(size_t max_in_flight, Where where) {
  CallSiteScope call_site(where);
  check(max_in_flight >= 1, "AsyncCheckpointer: max_in_flight must be at least 1 (saves queued or writing at once), "
        "got {}", max_in_flight);
  return max_in_flight;
}
}  // namespace

HostBufferPool::HostBufferPool(size_t max_buffers) : max_buffers_(max_buffers) {
  check(max_buffers >= 1, "HostBufferPool: needs at least one buffer, got {}", max_buffers);
}

std::unique_ptr<HostBufferPool::Buffer> HostBufferPool::acquire(size_t bytes) {
  std::unique_lock lock(mutex_);
  returned_.wait(lock, [&] { return !free_.empty() || created_ < max_buffers_; });
  std::unique_ptr<Buffer> buffer;
  if (!free_.empty()) {
    // The smallest free buffer that fits, else the largest one (it grows).
    const auto fits = [bytes](const std::unique_ptr<Buffer>& b) { return b->capacity >= bytes; };
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it)
      if (fits(*it) && (best == free_.end() || (*it)->capacity < (*best)->capacity)) best = it;
    if (best == free_.end())
      best = std::max_element(free_.begin(), free_.end(), [](const auto& a, const auto& b) {
        return a->capacity < b->capacity;
      });
    buffer = std::move(*best);
    free_.erase(best);
  } else {
    buffer = std::make_unique<Buffer>();
    ++created_;
  }
  lock.unlock();
  if (buffer->capacity < bytes) {
    buffer->data.reset();  // free first: the pool holds one copy of the state, not two
    buffer->data = std::make_unique_for_overwrite<std::byte[]>(bytes);
    buffer->capacity = bytes;
  }
  return buffer;
}

void HostBufferPool::release(std::unique_ptr<Buffer> buffer) {
  {
    std::lock_guard lock(mutex_);
    free_.push_back(std::move(buffer));
  }
  returned_.notify_one();
}

size_t HostBufferPool::allocated_bytes() const {
  std::lock_guard lock(mutex_);
  size_t total = 0;
  for (const auto& buffer : free_) total += buffer->capacity;
  return total;  // lent buffers are counted when they come back
}

bool SaveFuture::ready() const {
  return result_.valid() &&
         result_.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

struct AsyncCheckpointer::Job {
  HostState state;
  std::unique_ptr<HostBufferPool::Buffer> buffer;
  SaveOptions options;
  std::promise<std::filesystem::path> promise;
};

AsyncCheckpointer::AsyncCheckpointer(Coordinator& coordinator, size_t max_in_flight, Where where)
    : coordinator_(coordinator), max_in_flight_(checked_max_in_flight(max_in_flight, where)), pool_(max_in_flight_) {
  worker_ = std::thread([this] { run(); });
}

AsyncCheckpointer::~AsyncCheckpointer() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  worker_.join();
}

void AsyncCheckpointer::wait_for_room() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return in_flight_ < max_in_flight_; });
  ++in_flight_;
}

SaveFuture AsyncCheckpointer::enqueue(std::unique_ptr<Job> job) {
  SaveFuture future(job->promise.get_future().share());
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(job));
  }
  changed_.notify_all();
  return future;
}

SaveFuture AsyncCheckpointer::save_async_failed(std::string error, const SaveOptions& options) {
  wait_for_room();
  auto job = std::make_unique<Job>();
  job->options = options;
  job->state.error = std::move(error);
  return enqueue(std::move(job));
}

SaveFuture AsyncCheckpointer::save_async(const RankState& state, const SaveOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  wait_for_room();
  stats_ = AsyncSaveStats{};
  stats_.wait_seconds = seconds_since(start);
  auto job = std::make_unique<Job>();
  job->options = options;
  const auto snapshot_start = std::chrono::steady_clock::now();
  try {
    HostState snapshot;
    size_t total = 0;
    for (const auto& [name, local] : state.tensors()) total += align_up(local.tensor.nbytes());
    job->buffer = pool_.acquire(total);
    std::byte* cursor = job->buffer->data.get();
    for (const auto& [name, local] : state.tensors()) {
      HostTensor tensor = describe(name, local);
      gather_bytes(local.tensor, cursor);
      tensor.data = cursor;
      cursor += align_up(tensor.bytes);
      snapshot.tensors.push_back(std::move(tensor));
    }
    snapshot.values = state.values();
    check_host_state(snapshot);  // what save() refuses, on the bytes this save will write
    job->state = std::move(snapshot);
    stats_.snapshot_bytes = total;
  } catch (const std::exception& failure) {
    // This rank still takes part in the save's collectives, so the other ranks learn of the error.
    job->state = HostState{};
    job->state.error = failure.what();
  }
  stats_.snapshot_seconds = seconds_since(snapshot_start);
  SaveFuture future = enqueue(std::move(job));
  stats_.blocking_seconds = seconds_since(start);
  return future;
}

void AsyncCheckpointer::wait_all() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return in_flight_ == 0; });
}

void AsyncCheckpointer::run() {
  // The writer yields to training: below the training thread's priority it neither preempts it
  // when woken nor competes with it for a core (Linux nice is per thread). Failure is harmless.
  ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), kWriterNice);
  for (;;) {
    std::unique_ptr<Job> job;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and every queued save is done
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    try {
      job->promise.set_value(write_checkpoint(coordinator_, job->state, job->options));
    } catch (...) {
      job->promise.set_exception(std::current_exception());
    }
    if (job->buffer) pool_.release(std::move(job->buffer));
    {
      std::lock_guard lock(mutex_);
      --in_flight_;
    }
    changed_.notify_all();
  }
}

}  // namespace ember::ckpt
