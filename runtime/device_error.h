// Host side of the asynchronous device error report (kernels/cuda/device_error.h): turning a
// record a kernel wrote into the ember::Error message. Device-independent, so the CPU suite tests
// it with fake records; runtime/cuda/device_error_report.h reads the real ones.
#pragma once

#include <optional>
#include <string>

#include "kernels/cuda/device_error.h"

namespace ember::cuda {

// The registry name of the op that reported ("cross_entropy", ...); "an unknown op" otherwise.
const char* device_error_op_name(int32_t op);

// The message for a complete record: "cross_entropy: target 12 at index 5 is out of range [0, 10)",
// plus, when `at_synchronization`, a note that the error was found asynchronously and surfaced
// at this synchronization (and how to have it raised at the op instead).
std::string describe_device_error(const DeviceErrorRecord& record, bool at_synchronization);

// Takes a complete error out of `record` (the host's view of it, after a sync covered the kernels
// that write it) and clears it, so the next error can be recorded. Empty when no error is
// complete: a record a kernel is still writing is left for the next synchronization.
std::optional<DeviceErrorRecord> take_device_error(DeviceErrorRecord& record);

}  // namespace ember::cuda
