// CudaGraphReplay: stream capture, instantiation and launch of the lowered step list's segments
// through libember's CUDA graph API (runtime/cuda/cuda_graph.h; without CUDA it reports why not).
#include "graph/cuda_graph_replay.h"

#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "runtime/error.h"

#include "runtime/cuda/cuda_graph.h"

namespace ember::graph {

#ifdef EMBER_HAS_CUDA

namespace {

// Runs `step` and names the segment in its error: the CUDA error alone does not say which part
// of the compiled step failed.
template <typename Step> auto for_segment(const char* what, int segment, Step&& step) {
  try {
    return step();
  } catch (const Error& error) {
    fail("compile(mode=\"reduce_overhead\"): {} of step segment {} failed: {}", what, segment, error.what());
  }
}

// Routes ember's kernels to `stream` for its lifetime (they launch on the current stream).
class StreamSwitch {
 public:
  StreamSwitch(const cuda::Stream& to, const cuda::Stream& back) : back_(back) { cuda::set_current_stream(to); }
  ~StreamSwitch() { cuda::set_current_stream(back_); }
  StreamSwitch(const StreamSwitch&) = delete;
  StreamSwitch& operator=(const StreamSwitch&) = delete;

 private:
  cuda::Stream back_;
};

// The stream every replay on `device` captures and launches on, made once per process (like
// PyTorch's cached capture stream): graphs on it run one after another, and its cuBLASLt
// workspace and cached blocks (kept while any graph lives) exist once per device, not once per
// compiled function or recompile.
cuda::Stream capture_stream(Device device) {
  static std::mutex mutex;
  static std::map<int, cuda::Stream> streams;
  const std::lock_guard lock(mutex);
  auto found = streams.find(device.index);
  if (found == streams.end()) found = streams.emplace(device.index, cuda::Stream::create(device)).first;
  return found->second;
}

// Held by each replay of a segment on `device`, capture and launch alike: the capture stream is
// shared, and while one thread captures it, work another thread queues on it (a launch, an event
// wait) would be recorded into that graph or invalidate the capture. Recursive so that a nested
// replay on the same thread could not deadlock (none is expected: a compiled function called
// inside another one's capture runs inline).
std::recursive_mutex& capture_stream_lock(Device device) {
  static std::mutex mutex;
  static std::map<int, std::unique_ptr<std::recursive_mutex>> locks;
  const std::lock_guard lock(mutex);
  std::unique_ptr<std::recursive_mutex>& found = locks[device.index];
  if (!found) found = std::make_unique<std::recursive_mutex>();
  return *found;
}

}  // namespace

// Every CUDA call goes through libember (runtime/cuda/cuda_graph.h): one CUDA runtime per process.
struct CudaGraphReplay::State {
  Device device;
  cuda::Stream stream;  // capture_stream(device): capture needs a stream other than the legacy one
  cuda::Event before;
  cuda::Event after;
  std::vector<cuda::GraphExec> graphs;
  std::vector<bool> warmed_up;  // per segment: its first call ran (uncaptured, as a warm-up) and succeeded
  std::vector<bool> direct;  // per segment: capture failed once, so it runs without a graph
};

bool CudaGraphReplay::available(std::string* why_not) { return cuda::graphs_available(why_not); }

CudaGraphReplay::CudaGraphReplay(Device device, int segments) {
  cuda::check_device(device);
  cuda::DeviceGuard guard(device);  // the stream and events belong to `device`
  state_ = std::make_unique<State>();
  state_->device = device;
  state_->stream = capture_stream(device);
  state_->graphs.assign(static_cast<size_t>(segments), nullptr);
  state_->warmed_up.assign(static_cast<size_t>(segments), false);
  state_->direct.assign(static_cast<size_t>(segments), false);
}

CudaGraphReplay::~CudaGraphReplay() { invalidate(); }

void CudaGraphReplay::invalidate() {
  for (cuda::GraphExec& graph : state_->graphs) {
    cuda::destroy(graph, state_->stream);
    graph = nullptr;
  }
}

void CudaGraphReplay::run(int index, const std::function<void()>& record) {
  const std::lock_guard one_thread_at_a_time(capture_stream_lock(state_->device));
  cuda::DeviceGuard guard(state_->device);
  const cuda::Stream caller = cuda::current_stream(state_->device);
  const cuda::Stream& own = state_->stream;
  for_segment("ordering after the caller's work", index, [&] { cuda::wait_for(own, caller, state_->before); });
  try {
    run_on_own_stream(index, record);
  } catch (...) {
    // Kernels queued on the replay's stream before the error still use the step's buffers: the
    // caller's later work (a retry copying new inputs in, the buffers' reuse once the executor is
    // dropped) waits for them as after a success. The op's error is the one to report.
    try {
      cuda::wait_for(caller, own, state_->after);
    } catch (...) {
    }
    throw;
  }
  for_segment("ordering the caller's later work", index, [&] { cuda::wait_for(caller, own, state_->after); });
}

void CudaGraphReplay::run_on_own_stream(int index, const std::function<void()>& record) {
  const cuda::Stream& own = state_->stream;
  const cuda::Stream caller = cuda::current_stream(state_->device);
  const auto slot = static_cast<size_t>(index);
  cuda::GraphExec& exec = state_->graphs.at(slot);
  if (state_->direct.at(slot) || (exec == nullptr && !state_->warmed_up.at(slot))) {
    // Warm-up: the first call runs uncaptured on the replay's stream, so lazy initialisation
    // (library loads, cuBLASLt handle and this stream's workspace, cuDNN handles and plans)
    // happens outside the capture. Only a warm-up that succeeded counts.
    StreamSwitch on_own(own, caller);
    record();
    state_->warmed_up[slot] = true;
  } else if (exec == nullptr) {
    StreamSwitch on_own(own, caller);
    for_segment("beginning capture", index, [&] { cuda::begin_capture(own); });
    try {
      record();
      const cuda::CapturedGraph graph = for_segment("ending capture", index, [&] { return cuda::end_capture(own); });
      exec = for_segment("instantiating the graph", index, [&] { return cuda::instantiate(graph); });
    } catch (const Error& error) {
      // Work that cannot be captured (a host sync in some op, say). Under capture nothing ran on
      // the device, so the segment runs directly, now and from then on: correct, one launch per
      // kernel instead of one per segment, and said once. An op's own error raises again here.
      cuda::abandon_capture(own);
      state_->direct[slot] = true;
      std::fprintf(stderr, "ember: compile(mode=\"reduce_overhead\"): step segment %d runs without a CUDA graph: %s\n",
                   index, error.what());
      record();
    } catch (...) {
      // Anything else (out of host memory, say) is not ours to absorb, but the stream must not be
      // left capturing: every later use of it, and every cudaMalloc here, would fail.
      cuda::abandon_capture(own);
      throw;
    }
  }
  if (exec != nullptr) for_segment("launching the graph", index, [&] { cuda::launch(exec, own); });
}

#else  // built without CUDA: nothing can be captured

struct CudaGraphReplay::State {};

bool CudaGraphReplay::available(std::string* why_not) { return cuda::graphs_available(why_not); }

CudaGraphReplay::CudaGraphReplay(Device device, int segments) {
  (void)segments;
  fail("compile(mode=\"reduce_overhead\"): CUDA graphs need a CUDA build (device {})", device);
}

CudaGraphReplay::~CudaGraphReplay() = default;
void CudaGraphReplay::invalidate() {}
void CudaGraphReplay::run(int index, const std::function<void()>& record) {
  (void)index;
  (void)record;
}

#endif

}  // namespace ember::graph
