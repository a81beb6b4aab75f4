// How the ranks of one save or load talk: gather to rank 0 and broadcast from it. Ranks simulated
// as threads of one process use ThreadGroup; data parallelism will plug in its process group.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace ember::ckpt {

class Coordinator {
 public:
  virtual ~Coordinator() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  // Every rank passes a message; rank 0 gets all of them in rank order, other ranks get none.
  virtual std::vector<std::string> gather(std::string message) = 0;
  // Rank 0's message, returned on every rank (other ranks' arguments are ignored).
  virtual std::string broadcast(std::string message) = 0;
  // Every rank passes a message and gets all of them in rank order.
  virtual std::vector<std::string> all_gather(std::string message) = 0;
};

// A world of one: every collective returns its argument.
class SingleRank final : public Coordinator {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  std::vector<std::string> gather(std::string message) override { return {std::move(message)}; }
  std::string broadcast(std::string message) override { return message; }
  std::vector<std::string> all_gather(std::string message) override { return {std::move(message)}; }
};

// Ranks as threads of one process. Each thread uses its own rank(r); every rank must enter every
// collective in the same order, like any process group.
class ThreadGroup {
 public:
  explicit ThreadGroup(int world_size);
  ~ThreadGroup();
  ThreadGroup(const ThreadGroup&) = delete;
  ThreadGroup& operator=(const ThreadGroup&) = delete;

  int world_size() const { return static_cast<int>(ranks_.size()); }
  Coordinator& rank(int rank);

 private:
  struct Shared;
  class Member;
  std::unique_ptr<Shared> shared_;
  std::vector<std::unique_ptr<Member>> ranks_;
};

// Each rank reports its error ("" when it succeeded); every rank gets the same verdict: "" when all
// succeeded, else the lowest failing rank's error prefixed with "rank r: " when world_size > 1.
std::string agree_on_errors(Coordinator& coordinator, const std::string& error);

// Runs fn(coordinator) on `world_size` threads of a fresh ThreadGroup; rethrows the error of the
// lowest-numbered rank that failed. Every thread is started before any rank runs: when one cannot
// be started, the others are joined and an ember::Error says so, with no rank having run.
void run_ranks(int world_size, const std::function<void(Coordinator&)>& fn);

}  // namespace ember::ckpt
