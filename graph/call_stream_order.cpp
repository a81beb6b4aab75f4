// CallStreamOrder through libember's CUDA API; a build without CUDA has no streams to order.
#include "graph/call_stream_order.h"

#ifdef EMBER_HAS_CUDA
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_graph.h"
#endif

namespace ember::graph {

#ifdef EMBER_HAS_CUDA

struct CallStreamOrder::State {
  std::optional<cuda::Stream> previous;  // the stream the last call ran on
  std::optional<cuda::Event> switched;   // made at the first switch (an Event needs a device)
};

CallStreamOrder::CallStreamOrder() : state_(std::make_unique<State>()) {}
CallStreamOrder::~CallStreamOrder() = default;

std::optional<StreamId> CallStreamOrder::before_call(Device device) {
  if (!device.is_cuda()) return std::nullopt;
  const cuda::Stream now = cuda::current_stream(device);
  const bool switched = state_->previous && state_->previous->handle != now.handle;
  if (switched) {
    if (!state_->switched) state_->switched.emplace();
    cuda::wait_for(now, *state_->previous, *state_->switched);
  }
  state_->previous = now;
  return switched ? std::optional<StreamId>(now.id()) : std::nullopt;
}

#else

struct CallStreamOrder::State {};

CallStreamOrder::CallStreamOrder() = default;
CallStreamOrder::~CallStreamOrder() = default;
std::optional<StreamId> CallStreamOrder::before_call(Device) { return std::nullopt; }

#endif

}  // namespace ember::graph
