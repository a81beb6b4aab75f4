// Device side of the error report (kernels/cuda/device_error.h): the first thread to find bad
// data claims the record with an atomic and fills it; every later report is dropped, so the cost
// is one read (and, until the record is claimed, one atomic) per bad element and nothing at all
// on good data.
#pragma once

#include <cuda_runtime_api.h>

#include "kernels/cuda/device_error.h"

namespace ember::cuda::device {

__device__ __forceinline__ void report_error(IndexFlag flag, int64_t value, int64_t bound, int64_t position) {
  if (flag.record == nullptr) return;
  DeviceErrorRecord* record = flag.record;
  // Once claimed, later reports only read: an atomic on host-mapped memory crosses PCIe, and a
  // tensor full of bad indices reports from every thread.
  if (*reinterpret_cast<volatile const uint32_t*>(&record->state) != kDeviceErrorEmpty) return;
  if (atomicCAS(&record->state, kDeviceErrorEmpty, kDeviceErrorWriting) != kDeviceErrorEmpty) return;
  record->op = static_cast<int32_t>(flag.op);
  record->value = value;
  record->bound = bound;
  record->position = position;
  // The fields reach host memory before the state says they are complete.
  __threadfence_system();
  atomicExch(&record->state, kDeviceErrorComplete);
}

}  // namespace ember::cuda::device
