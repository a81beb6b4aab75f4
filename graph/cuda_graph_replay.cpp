// CudaGraphReplay: stream capture, instantiation and launch of the lowered step list's segments
// through the CUDA runtime API (compiled only with EMBER_HAS_CUDA; elsewhere it reports why not).
#include "graph/cuda_graph_replay.h"

#include <string>

#include "runtime/error.h"

#ifdef EMBER_HAS_CUDA
#include <cuda_runtime_api.h>

#include "runtime/cuda/cuda_context.h"
#endif

namespace ember::graph {

#ifdef EMBER_HAS_CUDA

namespace {

void check_cuda(cudaError_t status, const char* what, int segment) {
  check(status == cudaSuccess, "compile(mode=\"reduce_overhead\"): {} of step segment {} failed: {}", what, segment,
        cudaGetErrorString(status));
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

}  // namespace

struct CudaGraphReplay::State {
  Device device;
  cuda::Stream stream;  // capture needs a stream other than the legacy default one
  cudaEvent_t before = nullptr;
  cudaEvent_t after = nullptr;
  std::vector<cudaGraphExec_t> graphs;
};

bool CudaGraphReplay::available(std::string* why_not) {
  if (cuda::device_count(why_not) > 0) return true;
  return false;
}

CudaGraphReplay::CudaGraphReplay(Device device, int segments) : state_(std::make_unique<State>()) {
  cuda::check_device(device);
  cuda::DeviceGuard guard(device);
  state_->device = device;
  state_->stream = cuda::Stream::create(device);
  state_->graphs.assign(static_cast<size_t>(segments), nullptr);
  check_cuda(cudaEventCreateWithFlags(&state_->before, cudaEventDisableTiming), "creating an event", -1);
  check_cuda(cudaEventCreateWithFlags(&state_->after, cudaEventDisableTiming), "creating an event", -1);
}

CudaGraphReplay::~CudaGraphReplay() {
  invalidate();
  if (state_->before) cudaEventDestroy(state_->before);
  if (state_->after) cudaEventDestroy(state_->after);
}

void CudaGraphReplay::invalidate() {
  for (cudaGraphExec_t& graph : state_->graphs) {
    if (graph) cudaGraphExecDestroy(graph);
    graph = nullptr;
  }
}

void CudaGraphReplay::run(int index, const std::function<void()>& record) {
  cuda::DeviceGuard guard(state_->device);
  const cuda::Stream caller = cuda::current_stream(state_->device);
  auto* own = static_cast<cudaStream_t>(state_->stream.handle);
  auto* theirs = static_cast<cudaStream_t>(caller.handle);
  check_cuda(cudaEventRecord(state_->before, theirs), "ordering after the caller's work", index);
  check_cuda(cudaStreamWaitEvent(own, state_->before, 0), "ordering after the caller's work", index);
  cudaGraphExec_t& exec = state_->graphs.at(static_cast<size_t>(index));
  if (exec == nullptr) {
    cudaGraph_t graph = nullptr;
    {
      StreamSwitch on_own(state_->stream, caller);
      check_cuda(cudaStreamBeginCapture(own, cudaStreamCaptureModeThreadLocal), "beginning capture", index);
      try {
        record();
      } catch (...) {
        cudaStreamEndCapture(own, &graph);  // leave the stream usable, then report the real error
        if (graph) cudaGraphDestroy(graph);
        throw;
      }
      check_cuda(cudaStreamEndCapture(own, &graph), "ending capture", index);
    }
    const cudaError_t status = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    check_cuda(status, "instantiating the graph", index);
  }
  check_cuda(cudaGraphLaunch(exec, own), "launching the graph", index);
  check_cuda(cudaEventRecord(state_->after, own), "ordering the caller's later work", index);
  check_cuda(cudaStreamWaitEvent(theirs, state_->after, 0), "ordering the caller's later work", index);
}

#else  // built without CUDA: nothing can be captured

struct CudaGraphReplay::State {};

bool CudaGraphReplay::available(std::string* why_not) {
  if (why_not) *why_not = "ember was built without CUDA";
  return false;
}

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
