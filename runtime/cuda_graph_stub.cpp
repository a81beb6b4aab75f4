// The CUDA graph API of runtime/cuda/cuda_graph.h in a build without CUDA: nothing can be
// captured, and every call that would need the runtime says so instead of misbehaving.
#ifndef EMBER_HAS_CUDA

#include "runtime/cuda/cuda_graph.h"
#include "runtime/error.h"

namespace ember::cuda {

namespace {

[[noreturn]] void no_cuda(const char* what) {
  fail("cuda: {} needs CUDA graphs, but this build of ember has no CUDA backend (configured with "
       "EMBER_WITH_CUDA=OFF or without a CUDA toolkit)", what);
}

}  // namespace

bool graphs_available(std::string* why_not) {
  if (why_not) *why_not = "this build of ember has no CUDA backend";
  return false;
}

StreamId allocation_pool(Device) { no_cuda("allocation_pool"); }
void begin_capture(const Stream&) { no_cuda("begin_capture"); }
bool capture_running_on(int) { return false; }
bool capture_running_anywhere() { return false; }
std::unique_lock<std::mutex> hold_off_captures(int) { return {}; }  // nothing to hold off
CapturedGraph end_capture(const Stream&) { no_cuda("end_capture"); }
void abandon_capture(const Stream&) noexcept {}
GraphExec instantiate(CapturedGraph) { no_cuda("instantiate"); }
void launch(GraphExec, const Stream&) { no_cuda("launch"); }
void destroy(GraphExec, const Stream&) noexcept {}
void wait_for(const Stream&, const Stream&, Event&) { no_cuda("wait_for"); }

}  // namespace ember::cuda

#endif  // EMBER_HAS_CUDA
