// The asynchronous device error report: a kernel that finds bad data (a class target or an index
// out of range) writes it into its device's error record, first error wins, and the host raises
// it as an ember::Error at its next synchronization (runtime/cuda/device_error_report.h). Plain
// C++ (no CUDA header, no fmt): launchers, kernels and the host decoder share it.
#pragma once

#include <cstdint>

namespace ember::cuda {

// Which op's kernel reported; the host decoder names it. Values are stable within a process.
enum class DeviceErrorOp : int32_t {
  None = 0,
  CrossEntropy,
  CrossEntropyBackward,
  NllLoss,
  NllLossBackward,
  Embedding,
  EmbeddingBackward,
  IndexSelect,
  IndexAdd,
  Gather,
  ScatterAdd,
  OneHot,
};

// One device's first error, in mapped pinned host memory (the device writes it, the host reads it
// after a sync without a copy). state moves 0 (empty) -> 1 (a kernel claimed it and is writing)
// -> 2 (complete); only the host sets it back to 0.
struct DeviceErrorRecord {
  uint32_t state = 0;
  int32_t op = 0;         // a DeviceErrorOp
  int64_t value = 0;      // the bad target or index
  int64_t bound = 0;      // valid values are [0, bound)
  int64_t position = 0;   // the element of the target / index tensor (row-major) that held it
};

constexpr uint32_t kDeviceErrorEmpty = 0;
constexpr uint32_t kDeviceErrorWriting = 1;
constexpr uint32_t kDeviceErrorComplete = 2;

// What a launcher passes its kernel: where to report and as which op. A null record: do not report.
struct IndexFlag {
  DeviceErrorRecord* record = nullptr;  // the device's view of the record
  DeviceErrorOp op = DeviceErrorOp::None;
};

}  // namespace ember::cuda
