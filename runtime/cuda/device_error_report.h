// The per-device error records of the asynchronous device error report (kernels/cuda/device_error.h)
// and the host checks at ember's synchronization points. A kernel that finds a bad class target
// or index writes the device's record; the synchronizations of the runtime (cuda::synchronize,
// copies to the CPU such as item() and to(kCPU), the wait of a blocking copy to the device) then
// raise it as an ember::Error and clear it, so later calls work. The record is per device, not
// per thread (kernels cannot know the host thread): with several threads on one device, the
// first of them to synchronize raises the error, whichever thread queued the failing kernel.
#pragma once

#include <optional>

#include "kernels/cuda/device_error.h"
#include "runtime/device.h"

namespace ember::cuda {

// Where kernels of `op` on `device` report (the device's record, allocated on first use in mapped
// pinned host memory: the host reads it after a sync without a copy).
IndexFlag error_site(Device device, DeviceErrorOp op);

// Allocates `device`'s record now. Stream capture calls it first: the allocation (cudaHostAlloc)
// is not allowed while a stream is being captured.
void prepare_error_record(Device device);

// After a synchronization that covered the work queued on `device`: throws the recorded error, if
// any, as an ember::Error (clearing the record first). `at_synchronization` says in the message
// that the error surfaced at a sync after the op, not at the op.
void raise_device_error(Device device, bool at_synchronization = true);

// Takes `device`'s complete error, if any, and clears it (the op-level check reads it this way).
std::optional<DeviceErrorRecord> take_device_error(Device device);

}  // namespace ember::cuda
