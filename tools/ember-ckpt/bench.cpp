// ember-ckpt bench: save and load throughput of the wide MLP's training-state bytes, async save's
// blocking time against a plain snapshot copy, and resharded against same-layout loads. The raw
// disk baseline (dd) is run beside it by tools/ember-ckpt/bench.sh.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include <nlohmann/json.hpp>

#include "ckpt/async_save.h"
#include "ckpt/load.h"
#include "ckpt/reader.h"
#include "runtime/ember.h"
#include "tools/ember-ckpt/commands.h"

namespace ember::ckpt::cli {

namespace fs = std::filesystem;

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

double minimum(const std::vector<double>& values) { return *std::min_element(values.begin(), values.end()); }

// The wide MLP (784-1024-1024-1024-10) with Adam: weights, biases, exp_avg and exp_avg_sq; `copies`
// of them (copies > 1 shows how the fixed costs of a commit shrink with the state's size).
std::map<std::string, Tensor> wide_mlp_tensors(uint64_t seed, int copies) {
  manual_seed(seed);
  std::map<std::string, Tensor> tensors;
  const int64_t widths[] = {784, 1024, 1024, 1024, 10};
  for (int copy = 0; copy < copies; ++copy) {
    const std::string prefix = copies == 1 ? "" : "copy" + std::to_string(copy) + ".";
    for (int layer = 0; layer < 4; ++layer) {
      const std::string index = std::to_string(2 * layer);
      for (const std::string kind : {"model.", "optimizer.exp_avg.", "optimizer.exp_avg_sq."}) {
        tensors[prefix + kind + index + ".weight"] = randn({widths[layer + 1], widths[layer]});
        tensors[prefix + kind + index + ".bias"] = randn({widths[layer + 1]});
      }
    }
  }
  return tensors;
}

RankState rank_state(const std::map<std::string, Tensor>& tensors, int rank, int world_size) {
  RankState state;
  for (const auto& [name, tensor] : tensors) state.add_even_shard(name, tensor, rank, world_size);
  state.add_value("train.step", int64_t{100});
  return state;
}

// Drops the checkpoint's pages from the page cache so that a load reads the disk.
void drop_cache(const fs::path& directory) {
  for (const fs::directory_entry& item : fs::directory_iterator(directory)) {
    const int fd = ::open(item.path().c_str(), O_RDONLY);
    if (fd < 0) continue;
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
}

double timed_load(const std::map<std::string, Tensor>& tensors, const fs::path& directory,
                  int world_size, bool cold) {
  std::vector<RankState> live(world_size);
  for (int rank = 0; rank < world_size; ++rank) {
    std::map<std::string, Tensor> targets;
    for (const auto& [name, tensor] : tensors) targets[name] = zeros(tensor.sizes());  // a live model's memory is already touched
    live[rank] = rank_state(targets, rank, world_size);
  }
  if (cold) drop_cache(directory);
  const auto start = std::chrono::steady_clock::now();
  run_ranks(world_size, [&](Coordinator& coordinator) { load(coordinator, directory, live[coordinator.rank()]); });
  return seconds_since(start);
}

}  // namespace

int bench(const fs::path& directory, int world_size, int resharded_world, int repeat, int copies) {
  const std::map<std::string, Tensor> tensors = wide_mlp_tensors(1, copies);
  uint64_t bytes = 0;
  for (const auto& [name, tensor] : tensors) bytes += tensor.nbytes();
  fs::create_directories(directory);
  nlohmann::json result = {{"bytes", bytes}, {"world_size", world_size}, {"repeat", repeat}};

  std::vector<double> save_seconds;
  for (int trial = 0; trial < repeat; ++trial) {
    fs::remove_all(directory / "save");
    const auto start = std::chrono::steady_clock::now();
    run_ranks(world_size, [&](Coordinator& coordinator) {
      save(coordinator, rank_state(tensors, coordinator.rank(), world_size),
           {.root = directory / "save", .name = "step_000000100"});
    });
    save_seconds.push_back(seconds_since(start));
  }
  const fs::path saved = directory / "save" / "step_000000100";
  result["save_s"] = median(save_seconds);
  result["save_min_s"] = minimum(save_seconds);
  result["save_MBps"] = static_cast<double>(bytes) / 1e6 / median(save_seconds);

  for (const bool cold : {true, false}) {
    std::vector<double> same, resharded, ratio;
    for (int trial = 0; trial < repeat; ++trial) {  // interleaved, so both see the same load
      same.push_back(timed_load(tensors, saved, world_size, cold));
      resharded.push_back(timed_load(tensors, saved, resharded_world, cold));
      ratio.push_back(resharded.back() / same.back());
    }
    const std::string cache = cold ? "cold" : "warm";
    result["load_" + cache + "_s"] = median(same);
    result["load_" + cache + "_min_s"] = minimum(same);
    result["load_" + cache + "_MBps"] = static_cast<double>(bytes) / 1e6 / median(same);
    result["resharded_load_" + cache + "_s"] = median(resharded);
    result["resharded_load_" + cache + "_min_s"] = minimum(resharded);
    result["resharded_over_same_" + cache] = median(ratio);
  }

  // Async: steady-state blocking time of save_async against a memcpy of the same bytes into an
  // already allocated host buffer (the snapshot a perfect implementation would still have to do).
  std::vector<double> blocking, copy, snapshot, waiting, ratio;
  std::vector<std::byte> host(bytes);
  SingleRank single;
  AsyncCheckpointer checkpointer(single);
  const RankState whole = rank_state(tensors, 0, 1);
  for (int trial = 0; trial < 3 * repeat + 1; ++trial) {  // cheap: more trials, a steadier median
    const auto start = std::chrono::steady_clock::now();
    std::byte* cursor = host.data();
    for (const auto& [name, tensor] : tensors) {
      std::memcpy(cursor, tensor.raw_data_ptr(), tensor.nbytes());
      cursor += tensor.nbytes();
    }
    const double copy_seconds = seconds_since(start);
    fs::remove_all(directory / "async");
    SaveFuture future = checkpointer.save_async(whole, {.root = directory / "async", .name = "step_000000100"});
    const AsyncSaveStats stats = checkpointer.last_stats();
    future.wait();
    if (trial == 0) continue;  // the first save allocates the pool's buffer
    copy.push_back(copy_seconds);
    blocking.push_back(stats.blocking_seconds);
    snapshot.push_back(stats.snapshot_seconds);
    waiting.push_back(stats.wait_seconds);
    ratio.push_back(stats.blocking_seconds / copy_seconds);  // per trial: both saw the same load
  }
  result["snapshot_copy_s"] = median(copy);
  result["async_blocking_s"] = median(blocking);
  result["async_snapshot_s"] = median(snapshot);
  result["async_wait_s"] = median(waiting);
  result["async_blocking_over_copy"] = median(ratio);
  // Minimums: each cost without interference from other processes (a busy machine adds noise).
  result["snapshot_copy_min_s"] = minimum(copy);
  result["async_blocking_min_s"] = minimum(blocking);
  result["async_blocking_over_copy_min"] =
      result["async_blocking_min_s"].get<double>() / result["snapshot_copy_min_s"].get<double>();
  result["async_blocking_over_sync_save"] = median(blocking) / median(save_seconds);
  std::printf("%s\n", result.dump(1).c_str());
  fs::remove_all(directory / "async");
  return 0;
}

}  // namespace ember::ckpt::cli
