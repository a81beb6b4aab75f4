// ThreadGroup: gather/broadcast between threads through shared slots and a barrier.
#include "ckpt/coordinator.h"

#include <barrier>
#include <exception>
#include <thread>

#include "runtime/error.h"

namespace ember::ckpt {

struct ThreadGroup::Shared {
  explicit Shared(int world_size) : slots(world_size), barrier(world_size) {}
  std::vector<std::string> slots;
  std::barrier<> barrier;
};

class ThreadGroup::Member final : public Coordinator {
 public:
  Member(Shared& shared, int rank) : shared_(shared), rank_(rank) {}
  int rank() const override { return rank_; }
  int world_size() const override { return static_cast<int>(shared_.slots.size()); }

  std::vector<std::string> gather(std::string message) override {
    shared_.slots[rank_] = std::move(message);
    shared_.barrier.arrive_and_wait();
    std::vector<std::string> all;
    if (rank_ == 0) all = shared_.slots;
    shared_.barrier.arrive_and_wait();  // nobody refills a slot before rank 0 has read it
    return all;
  }

  std::string broadcast(std::string message) override {
    if (rank_ == 0) shared_.slots[0] = std::move(message);
    shared_.barrier.arrive_and_wait();
    std::string result = shared_.slots[0];
    shared_.barrier.arrive_and_wait();
    return result;
  }

 private:
  Shared& shared_;
  int rank_;
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
  std::vector<std::string> errors = coordinator.gather(error);
  std::string verdict;
  for (size_t rank = 0; rank < errors.size(); ++rank) {
    if (errors[rank].empty()) continue;
    verdict = coordinator.world_size() > 1 ? fmt::format("rank {}: {}", rank, errors[rank])
                                           : errors[rank];
    break;
  }
  return coordinator.broadcast(std::move(verdict));
}

void run_ranks(int world_size, const std::function<void(Coordinator&)>& fn) {
  ThreadGroup group(world_size);
  std::vector<std::exception_ptr> errors(world_size);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world_size; ++rank)
    threads.emplace_back([&, rank] {
      try {
        fn(group.rank(rank));
      } catch (...) {
        errors[rank] = std::current_exception();
      }
    });
  for (std::thread& thread : threads) thread.join();
  for (const std::exception_ptr& error : errors)
    if (error) std::rethrow_exception(error);
}

}  // namespace ember::ckpt
