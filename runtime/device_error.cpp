// Decoding and clearing device error records; see runtime/device_error.h.
#include "runtime/device_error.h"

#include <fmt/format.h>

#include <atomic>

namespace ember::cuda {

const char* device_error_op_name(int32_t op) {
  switch (static_cast<DeviceErrorOp>(op)) {
    case DeviceErrorOp::CrossEntropy: return "cross_entropy";
    case DeviceErrorOp::CrossEntropyBackward: return "cross_entropy_backward";
    case DeviceErrorOp::NllLoss: return "nll_loss";
    case DeviceErrorOp::NllLossBackward: return "nll_loss_backward";
    case DeviceErrorOp::Embedding: return "embedding";
    case DeviceErrorOp::EmbeddingBackward: return "embedding_backward";
    case DeviceErrorOp::IndexSelect: return "index_select";
    case DeviceErrorOp::IndexAdd: return "index_add";
    case DeviceErrorOp::Gather: return "gather";
    case DeviceErrorOp::ScatterAdd: return "scatter_add";
    case DeviceErrorOp::OneHot: return "one_hot";
    case DeviceErrorOp::None: break;
  }
  return "an unknown op";
}

std::string describe_device_error(const DeviceErrorRecord& record, bool at_synchronization) {
  const char* op = device_error_op_name(record.op);
  std::string message = fmt::format(
      "a CUDA kernel of an unknown op (code {}) reported the value {} at position {}, outside [0, {})", record.op,
      record.value, record.position, record.bound);
  switch (static_cast<DeviceErrorOp>(record.op)) {
    case DeviceErrorOp::CrossEntropy:
    case DeviceErrorOp::CrossEntropyBackward:
    case DeviceErrorOp::NllLoss:
    case DeviceErrorOp::NllLossBackward:
      message = fmt::format("{}: target {} at index {} is out of range [0, {})", op, record.value, record.position,
                            record.bound);
      break;
    case DeviceErrorOp::Embedding:
      message = fmt::format("embedding: index {} at position {} is out of range for a weight with {} rows",
                            record.value, record.position, record.bound);
      break;
    case DeviceErrorOp::EmbeddingBackward:
      message = fmt::format("embedding_backward: index {} at position {} is out of range for num_weights {}",
                            record.value, record.position, record.bound);
      break;
    case DeviceErrorOp::OneHot:
      message = fmt::format("one_hot: class index {} at position {} is out of range for {} classes", record.value,
                            record.position, record.bound);
      break;
    case DeviceErrorOp::IndexSelect:
    case DeviceErrorOp::IndexAdd:
    case DeviceErrorOp::Gather:
    case DeviceErrorOp::ScatterAdd:
      message = fmt::format("{}: index {} at position {} is out of range for a dim of size {}", op, record.value,
                            record.position, record.bound);
      break;
    case DeviceErrorOp::None:
      break;  // like codes outside the enum (no case): the message stays the unknown-op one
  }
  if (at_synchronization)
    message += " (reported at synchronization: the CUDA kernel found it asynchronously, so it surfaces at the "
               "first sync after the op; set EMBER_CUDA_CHECK_INDICES=1 to raise it at the op itself)";
  return message;
}

std::optional<DeviceErrorRecord> take_device_error(DeviceErrorRecord& record) {
  std::atomic_ref<uint32_t> state(record.state);
  if (state.load(std::memory_order_acquire) != kDeviceErrorComplete) return std::nullopt;
  DeviceErrorRecord taken = record;
  taken.state = kDeviceErrorComplete;
  state.store(kDeviceErrorEmpty, std::memory_order_release);
  return taken;
}

}  // namespace ember::cuda
