// ThreadHandlePool with stand-in handles: each thread has its own handle per device, and an
// exited thread's handles serve later threads instead of new ones being made for every thread.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <thread>
#include <vector>

#include "runtime/cuda/thread_handle_pool.h"

namespace test_thread_handle_pool {

using ember::cuda::ThreadHandlePool;

namespace {

// Handles are 1, 2, 3, ... in order of creation (0 is "none").
std::atomic<int> handles_made{0};
int make_handle(int) { return ++handles_made; }

}  // namespace

TEST_CASE("thread handle pool: one handle per thread and device, given back when the thread exits") {
  ThreadHandlePool<int>& pool = ThreadHandlePool<int>::of(make_handle);
  int first = 0;
  std::thread([&] {
    first = pool.for_this_thread(3);
    CHECK(pool.for_this_thread(3) == first);  // the same one again on the same thread
    CHECK(pool.for_this_thread(5) != first);  // another device, another handle
  }).join();
  CHECK(pool.spare_count(3) == 1);  // given back at the thread's exit
  const int made = handles_made.load();

  // A later thread takes the spare instead of making one; without `create` it still gets it.
  std::thread([&] { CHECK(pool.for_this_thread(3, /*create=*/false) == first); }).join();
  CHECK(handles_made.load() == made);
  // With no spare and no `create`, nothing.
  std::thread([&] {
    CHECK(pool.for_this_thread(7, /*create=*/false) == 0);
    CHECK(handles_made.load() == made);
  }).join();

  // Threads alive at the same time never share a handle.
  constexpr int kThreads = 4;
  std::vector<int> seen(kThreads, 0);
  std::barrier all_have_one(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      seen[static_cast<size_t>(t)] = pool.for_this_thread(3);
      all_have_one.arrive_and_wait();  // nobody exits (and gives one back) before all took theirs
    });
  for (std::thread& thread : threads) thread.join();
  std::sort(seen.begin(), seen.end());
  CHECK(std::adjacent_find(seen.begin(), seen.end()) == seen.end());
  CHECK(std::count(seen.begin(), seen.end(), first) == 1);  // the spare served one of them
  CHECK(pool.spare_count(3) == static_cast<size_t>(kThreads));
  CHECK_THROWS_WITH_AS(pool.for_this_thread(-1), doctest::Contains("device index -1 out of range"), ember::Error);
}

}  // namespace test_thread_handle_pool
