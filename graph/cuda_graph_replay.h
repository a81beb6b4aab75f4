// mode="reduce_overhead" on CUDA: segments of the lowered step list are captured once into CUDA
// graphs (stream capture) and relaunched each call, so a step costs one launch per segment instead
// of one host dispatch per kernel.
//
// What it requires, and the choices made:
//  - Stable addresses. The arena is allocated once; graph inputs are copied into buffers owned by
//    the executor before each launch, and the per-call buffers (outputs, new .grads) are allocated
//    once too. Returned outputs are cloned after the launch; installed .grad tensors alias the
//    executor's buffers and are overwritten by the next call (as in PyTorch's CUDA-graph mode).
//  - Host scalars refreshed per call (Adam's lr and step count) live in kernel parameters, which a
//    captured graph would freeze. Those nodes are kept OUTSIDE the graphs: the step list is split at
//    them, and they are launched directly each call between the captured segments.
//  - The first call of each segment runs uncaptured on the capture stream (a warm-up: libraries'
//    lazy set-up and cuBLASLt's workspace happen outside the capture); the second call captures,
//    later calls launch. Memory a captured kernel allocates comes from the capture stream's graph
//    pool (cuda::graph_pool), private to the graphs captured there: nothing allocated outside a
//    capture is handed a block a graph still writes, and its segments are not returned to the
//    driver while such a graph lives. cudaMalloc during capture runs in relaxed capture mode.
//  - No host synchronization or host read inside a captured segment: host<->device copies run
//    directly between segments (cuda_graph_plan.h), and a graph that updates one of its inputs in
//    place is not captured at all (the kernels see staged copies). A state tensor whose storage
//    moved (data pointer changed) makes the executor capture again.
//  - One capture stream per device, shared by every compiled function and thread: replays of
//    segments on a device run one at a time (a lock), so no thread queues work on the stream
//    while another captures it.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/device.h"

namespace ember::graph {

class CudaGraphReplay {
 public:
  // False (with the reason) when this build or machine cannot capture CUDA graphs.
  static bool available(std::string* why_not);

  CudaGraphReplay(Device device, int segments);
  ~CudaGraphReplay();
  CudaGraphReplay(const CudaGraphReplay&) = delete;
  CudaGraphReplay& operator=(const CudaGraphReplay&) = delete;

  // Runs segment `index`: the first time, `record` runs directly on the capture stream; the second
  // time it runs under stream capture and the graph is instantiated; from then on, the graph is
  // launched. A segment whose capture or instantiation fails runs `record` directly from then on
  // (with a note on stderr). Work is ordered after what the current stream queued before, and the
  // current stream waits for it afterwards.
  void run(int index, const std::function<void()>& record);
  // Drops every captured graph (the next run captures again).
  void invalidate();

 private:
  // The segment's work on the replay's stream: warm-up, capture, or launch (run() orders it).
  void run_on_own_stream(int index, const std::function<void()>& record);

  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace ember::graph
