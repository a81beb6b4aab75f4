// CUDA graph capture and replay over the CUDA runtime API (see cuda_graph.h for why it lives in
// libember). Errors throw with the runtime's own message through cuda_check.
#include "runtime/cuda/cuda_graph.h"

#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <exception>
#include <mutex>

#include "runtime/cuda/cublaslt_gemm.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/device_error_report.h"
#include "runtime/error.h"

namespace ember::cuda {

namespace {

cudaStream_t stream_handle(const Stream& stream) { return static_cast<cudaStream_t>(stream.handle); }

thread_local bool capturing = false;
thread_local Stream captured;  // while `capturing`
std::array<std::atomic<int>, kMaxDevices> captures_running{};  // by any thread, per device
std::array<std::mutex, kMaxDevices> capture_gates;  // see hold_off_captures

void stop_capturing() {
  if (!capturing) return;
  captures_running[static_cast<size_t>(captured.device.index)].fetch_sub(1);
  capturing = false;
}

// Undoes begin_capture's retention; called where nothing may throw. A failure here is a
// bookkeeping bug: said, and the blocks are kept (safe, only not returned).
void release_capture_blocks(const Stream& stream) noexcept {
  try {
    device_allocator(stream.device.index).release_stream(graph_pool(stream));
  } catch (const std::exception& error) {
    std::fprintf(stderr, "ember: %s\n", error.what());
  }
}

}  // namespace

bool graphs_available(std::string* why_not) { return device_count(why_not) > 0; }

void begin_capture(const Stream& stream) {
  check(stream.handle != nullptr, "cuda: cannot capture the legacy default stream of {}", stream.device);
  DeviceGuard guard(stream.device);
  prepare_error_record(stream.device);  // captured kernels report there; it cannot be allocated mid-capture
  prepare_gemm_for_capture(stream.device.index, stream.handle);  // the cuBLASLt handle and workspace too
  CachingAllocator& allocator = device_allocator(stream.device.index);
  CachingAllocator& pinned = pinned_allocator();
  // Counted first; then every device-wide wait that checked the count before is let finish (each
  // checks under one of these locks), so none is running when the capture begins, none after.
  const size_t index = static_cast<size_t>(stream.device.index);
  std::atomic<int>& running = captures_running[index];
  running.fetch_add(1);
  bool retained = false;
  try {
    // Blocks this capture allocates and frees stay cached for the graph: not cudaFree'd while it lives.
    allocator.retain_stream(graph_pool(stream));  // under the lock its releases check in
    retained = true;
    pinned.wait_for_releases();
    { const std::lock_guard gate(capture_gates[index]); }
    cuda_check(cudaStreamBeginCapture(stream_handle(stream), cudaStreamCaptureModeThreadLocal));
  } catch (...) {
    // Not capturing after all: releases may run again on this device.
    running.fetch_sub(1);
    if (retained) allocator.release_stream(graph_pool(stream));
    throw;
  }
  capturing = true;
  captured = stream;
}

StreamId allocation_pool(Device device) {
  const Stream current = current_stream(device);
  if (capturing && captured.device == device && captured.handle == current.handle) return graph_pool(current);
  return current.id();
}

bool capturing_on_this_thread() { return capturing; }

bool capture_running_on(int device) {
  return device >= 0 && device < kMaxDevices && captures_running[static_cast<size_t>(device)].load() > 0;
}

std::unique_lock<std::mutex> hold_off_captures(int device) {
  check(device >= 0 && device < kMaxDevices, "cuda: hold_off_captures of device {}", device);
  return std::unique_lock(capture_gates[static_cast<size_t>(device)]);
}

bool capture_running_anywhere() {
  for (const std::atomic<int>& count : captures_running)
    if (count.load() > 0) return true;
  return false;
}

CapturedGraph end_capture(const Stream& stream) {
  DeviceGuard guard(stream.device);
  cudaGraph_t graph = nullptr;
  const cudaError_t status = cudaStreamEndCapture(stream_handle(stream), &graph);
  stop_capturing();  // the capture ends whether or not it succeeded
  cuda_check(status);
  return graph;
}

void abandon_capture(const Stream& stream) noexcept {
  cudaGraph_t graph = nullptr;
  cudaStreamEndCapture(stream_handle(stream), &graph);
  stop_capturing();
  if (graph) cudaGraphDestroy(graph);
  cudaGetLastError();  // the capture's failure is reported by the caller's own error
  release_capture_blocks(stream);
}

GraphExec instantiate(CapturedGraph graph) {
  auto* recorded = static_cast<cudaGraph_t>(graph);
  cudaGraphExec_t exec = nullptr;
  const cudaError_t status = cudaGraphInstantiate(&exec, recorded, 0);
  cudaGraphDestroy(recorded);
  cuda_check(status);
  return exec;
}

void launch(GraphExec graph, const Stream& stream) {
  DeviceGuard guard(stream.device);
  cuda_check(cudaGraphLaunch(static_cast<cudaGraphExec_t>(graph), stream_handle(stream)));
}

void destroy(GraphExec graph, const Stream& captured_on) noexcept {
  if (!graph) return;
  cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(graph));
  release_capture_blocks(captured_on);
}

void wait_for(const Stream& waiter, const Stream& producer, Event& event) {
  event.record(producer);
  DeviceGuard guard(waiter.device);
  cuda_check(cudaStreamWaitEvent(stream_handle(waiter), static_cast<cudaEvent_t>(event.handle()), 0));
}

}  // namespace ember::cuda
