// Sources of asynchronous host-to-device copies, kept alive until the GPU has read them.
//
// A non_blocking copy from pinned memory returns before the copy ran, so its source must not be
// freed (and handed out again by the pinned pool) until then. An event recorded after the copy
// marks that point, and the source is dropped on an ember thread once the event has completed:
// checked at every later hold and at synchronize(). The alternative, a host callback queued on
// the stream, stalls the stream until the driver's thread has run it, and would drop the tensor on
// that thread, where a from_blob deleter must not call CUDA.
#pragma once

#include <cstddef>

#include "runtime/cuda/cuda_context.h"
#include "runtime/tensor.h"

namespace ember::cuda {

// Keeps `source` alive until the work queued on `stream` so far (the copy reading it) is done.
void hold_until_copied(Tensor source, const Stream& stream);
// Drops the held sources whose copies have finished.
void release_copied_sources();
// How many sources are still held (tests).
size_t held_copy_sources();

}  // namespace ember::cuda
