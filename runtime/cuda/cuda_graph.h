// CUDA graphs (stream capture, instantiation, launch) through libember's CUDA runtime. Libraries
// built on libember (ember_graph's mode="reduce_overhead") call these instead of cudart, so the
// process holds ONE CUDA runtime: a second static cudart would keep its own contexts, streams and
// graph handles, which do not mix with ours. No CUDA header here: the handles are opaque.
#pragma once

#include <mutex>
#include <string>

#include "runtime/cuda/cuda_context.h"

namespace ember::cuda {

using CapturedGraph = void*;  // cudaGraph_t: the recorded work, before instantiation
using GraphExec = void*;      // cudaGraphExec_t: what is launched

// False (with the reason) when this build or machine cannot capture CUDA graphs.
bool graphs_available(std::string* why_not = nullptr);

// The caching allocator's pool for memory that kernels captured on `stream` use: private to the
// graphs captured there (as PyTorch's graph pools), so that no allocation outside a capture is
// handed a block a graph still writes on every launch. Graphs captured on one stream share it
// (their launches on that stream run one after another). A pool key is the stream's id with the
// low bit set: stream handles are pointers, so no real stream has that id.
inline StreamId graph_pool(const Stream& stream) { return stream.id() | 1; }
// The pool an allocation on `device` made now belongs to: the graph pool of the stream this
// thread captures when that is the device's current stream, else the current stream's own.
StreamId allocation_pool(Device device);

// Starts capturing the work queued on `stream` (never the legacy default stream) from this
// thread; other threads may keep using CUDA meanwhile (thread-local capture mode). From here on
// the stream's graph pool stays allocated from the driver (the graph keeps its addresses), until
// the capture is abandoned or every graph made from its captures is destroyed.
void begin_capture(const Stream& stream);
// Ends the capture of `stream` and returns the recorded graph.
CapturedGraph end_capture(const Stream& stream);
// Ends a capture after a failure (in capturing, ending or instantiating), discarding what was
// recorded, so the stream is usable again.
void abandon_capture(const Stream& stream) noexcept;
// Instantiates `graph` for launching; the recorded graph is destroyed either way.
GraphExec instantiate(CapturedGraph graph);
// True between begin_capture and end_capture / abandon_capture on this thread.
bool capturing_on_this_thread();
// True while any thread captures a stream of `device` (of any device). A device-wide wait (a
// device sync, cudaFree, cudaFreeHost, unloading a module) from any thread would invalidate that
// capture, so ember's own such waits are put off or skipped meanwhile (a cuda::synchronize the
// user calls is not). The check and the wait must not be split by a capture's start: the caching
// allocators check under their own lock and begin_capture waits for that lock after counting
// itself (CachingAllocator::wait_for_releases); KernelLibrary's unload checks and waits while
// holding hold_off_captures(device).
bool capture_running_on(int device);
bool capture_running_anywhere();
// While the returned lock is held, no capture on `device` begins (begin_capture waits for it).
std::unique_lock<std::mutex> hold_off_captures(int device);
// Queues one launch of `graph` on `stream`.
void launch(GraphExec graph, const Stream& stream);
// Frees an instantiated graph (null is a no-op) captured on `captured_on`; an in-flight launch
// finishes first, and the stream's blocks may go back to the driver once no graph holds them.
void destroy(GraphExec graph, const Stream& captured_on) noexcept;

// Makes `waiter` wait (on the device, no host sync) for the work queued on `producer` so far;
// `event` is the caller's reusable marker.
void wait_for(const Stream& waiter, const Stream& producer, Event& event);

}  // namespace ember::cuda
