// Orders a compiled function's call after its previous call when the caller switched CUDA streams
// in between. The executor's arena (and, under reduce_overhead, its staged buffers) is shared by
// every call, and kernels queued on two streams may run at the same time: without this, a call
// made under another stream could overwrite intermediates the previous call is still using. Eager
// ops need nothing like it: the caching allocator keeps each stream's blocks apart.
#pragma once

#include <memory>
#include <optional>

#include "runtime/device.h"
#include "runtime/memory/caching_allocator.h"

namespace ember::graph {

class CallStreamOrder {
 public:
  CallStreamOrder();
  ~CallStreamOrder();
  CallStreamOrder(const CallStreamOrder&) = delete;
  CallStreamOrder& operator=(const CallStreamOrder&) = delete;

  // Before a call whose buffers live on `device`: when `device`'s current stream is not the one
  // the previous call ran on, that stream waits (on the device, not the host) for everything the
  // previous one had queued, and the new stream is returned: the caller marks its long-lived
  // buffers as used on it (record_stream), so that freeing them later waits for its work too.
  // Free when the stream stays the same; nothing for a CPU device.
  std::optional<StreamId> before_call(Device device);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace ember::graph
