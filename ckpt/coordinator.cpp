// ThreadGroup: collectives between threads through shared slots and a barrier.
#include "ckpt/coordinator.h"

#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

#include "runtime/error.h"

namespace ember::ckpt {

namespace {

// A barrier whose waiters sleep at once. std::barrier spins before it sleeps, and with more rank
// threads than cores (8 on the 2-core dev machine) the spinning ranks take the cores from the
// ranks still reading.
class SleepingBarrier {
 public:
  explicit SleepingBarrier(int count) : count_(count) {}

  void arrive_and_wait() {
    std::unique_lock lock(mutex_);
    const uint64_t generation = generation_;
    if (++arrived_ == count_) {
      arrived_ = 0;
      ++generation_;
      released_.notify_all();
      return;
    }
    released_.wait(lock, [&] { return generation_ != generation; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable released_;
  const int count_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
};

}  // namespace

// Two sets of slots used by turns: a collective writes one set, crosses the barrier once and
// reads it. A rank that runs ahead writes the other set in the next collective and cannot come
// back to this one before every rank has crossed the next barrier, that is, finished reading.
struct ThreadGroup::Shared {
  explicit Shared(int world_size)
      : slots{std::vector<std::string>(world_size), std::vector<std::string>(world_size)},
        barrier(world_size) {}
  std::vector<std::string> slots[2];
  SleepingBarrier barrier;
};

class ThreadGroup::Member final : public Coordinator {
 public:
  Member(Shared& shared, int rank) : shared_(shared), rank_(rank) {}
  int rank() const override { return rank_; }
  int world_size() const override { return static_cast<int>(shared_.slots[0].size()); }

  std::vector<std::string> gather(std::string message) override {
    std::vector<std::string>& slots = exchange(std::move(message), true);
    return rank_ == 0 ? slots : std::vector<std::string>{};
  }

  std::string broadcast(std::string message) override {
    return exchange(std::move(message), rank_ == 0)[0];
  }

  std::vector<std::string> all_gather(std::string message) override {
    return exchange(std::move(message), true);
  }

 private:
  // Publishes `message` in this rank's slot (when `publish`), waits for every rank, and returns
  // the slots of this collective.
  std::vector<std::string>& exchange(std::string message, bool publish) {
    std::vector<std::string>& slots = shared_.slots[collectives_++ % 2];
    if (publish) slots[rank_] = std::move(message);
    shared_.barrier.arrive_and_wait();
    return slots;
  }

  Shared& shared_;
  int rank_;
  uint64_t collectives_ = 0;
};

ThreadGroup::ThreadGroup(int world_size) {
  check(world_size >= 1, "ThreadGroup: world_size must be at least 1, got {}", world_size);
  shared_ = std::make_unique<Shared>(world_size);
  for (int rank = 0; rank < world_size; ++rank)
    ranks_.push_back(std::make_unique<Member>(*shared_, rank));
}

ThreadGroup::~ThreadGroup() = default;

Coordinator& ThreadGroup::rank(int rank) {
  check(rank >= 0 && rank < world_size(), "ThreadGroup: rank {} is outside world_size {}", rank,
        world_size());
  return *ranks_[rank];
}

std::string agree_on_errors(Coordinator& coordinator, const std::string& error) {
  // Every rank sees every error and picks the same one: one collective, not gather + broadcast.
  const std::vector<std::string> errors = coordinator.all_gather(error);
  for (size_t rank = 0; rank < errors.size(); ++rank) {
    if (errors[rank].empty()) continue;
    return coordinator.world_size() > 1 ? fmt::format("rank {}: {}", rank, errors[rank]) : errors[rank];
  }
  return "";
}

void run_ranks(int world_size, const std::function<void(Coordinator&)>& fn) {
  ThreadGroup group(world_size);
  std::vector<std::exception_ptr> errors(world_size);
  // No rank runs until every thread exists: a rank that ran would wait in its first collective for
  // ranks that never start. When a thread cannot start, the started ones return without running.
  std::mutex mutex;
  std::condition_variable decided;
  enum class Start { Waiting, Go, Abandon } start = Start::Waiting;
  std::vector<std::thread> threads;
  auto release = [&](Start verdict) {
    {
      std::lock_guard lock(mutex);
      start = verdict;
    }
    decided.notify_all();
    for (std::thread& thread : threads) thread.join();
  };
  try {
    threads.reserve(world_size);
    for (int rank = 0; rank < world_size; ++rank)
      threads.emplace_back([&, rank] {
        {
          std::unique_lock lock(mutex);
          decided.wait(lock, [&] { return start != Start::Waiting; });
          if (start == Start::Abandon) return;
        }
        try {
          fn(group.rank(rank));
        } catch (...) {
          errors[rank] = std::current_exception();
        }
      });
  } catch (const std::exception& failure) {  // out of threads, or of memory for their stacks
    const size_t started = threads.size();
    release(Start::Abandon);
    fail("run_ranks: could not start the thread of rank {} of {} ({}); no rank ran (the process's "
         "limits on threads or address space: ulimit -u, ulimit -v)", started, world_size, failure.what());
  }
  release(Start::Go);
  for (const std::exception_ptr& error : errors)
    if (error) std::rethrow_exception(error);
}

}  // namespace ember::ckpt
