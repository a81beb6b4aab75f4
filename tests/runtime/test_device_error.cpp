// The host side of the asynchronous device error report on fake records (what a kernel would
// write): the messages name the op and the values, a complete record is taken once and cleared,
// and a record a kernel is still writing is left alone. The CUDA side is in test_cuda_device_error.cpp.
#include <doctest/doctest.h>

#include <string>

#include "runtime/device_error.h"

namespace test_device_error {

using namespace ember::cuda;

namespace {

DeviceErrorRecord complete(DeviceErrorOp op, int64_t value, int64_t bound, int64_t position) {
  DeviceErrorRecord record;
  record.state = kDeviceErrorComplete;
  record.op = static_cast<int32_t>(op);
  record.value = value;
  record.bound = bound;
  record.position = position;
  return record;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("device error messages name the op, the bad value, its position and the valid range") {
  const DeviceErrorRecord target = complete(DeviceErrorOp::CrossEntropy, 12, 10, 5);
  CHECK(describe_device_error(target, false) == "cross_entropy: target 12 at index 5 is out of range [0, 10)");
  const std::string later = describe_device_error(target, true);
  CHECK(later.rfind("cross_entropy: target 12 at index 5 is out of range [0, 10) (reported at synchronization", 0) ==
        0);
  CHECK(contains(later, "EMBER_CUDA_CHECK_INDICES=1"));
  CHECK(describe_device_error(complete(DeviceErrorOp::NllLoss, -3, 4, 0), false) ==
        "nll_loss: target -3 at index 0 is out of range [0, 4)");
  CHECK(describe_device_error(complete(DeviceErrorOp::CrossEntropyBackward, 7, 7, 2), false) ==
        "cross_entropy_backward: target 7 at index 2 is out of range [0, 7)");
  CHECK(describe_device_error(complete(DeviceErrorOp::Embedding, 9, 6, 1), false) ==
        "embedding: index 9 at position 1 is out of range for a weight with 6 rows");
  CHECK(describe_device_error(complete(DeviceErrorOp::EmbeddingBackward, 9, 4, 1), false) ==
        "embedding_backward: index 9 at position 1 is out of range for num_weights 4");
  CHECK(describe_device_error(complete(DeviceErrorOp::OneHot, 9, 4, 1), false) ==
        "one_hot: class index 9 at position 1 is out of range for 4 classes");
  CHECK(describe_device_error(complete(DeviceErrorOp::Gather, -1, 3, 8), false) ==
        "gather: index -1 at position 8 is out of range for a dim of size 3");
  for (DeviceErrorOp op : {DeviceErrorOp::IndexSelect, DeviceErrorOp::IndexAdd, DeviceErrorOp::ScatterAdd})
    CHECK(contains(describe_device_error(complete(op, 5, 2, 0), false),
                   std::string(device_error_op_name(static_cast<int32_t>(op))) + ": index 5 at position 0"));
}

TEST_CASE("device error messages of an unknown op code still carry the values") {
  for (int32_t code : {0, 99, -4}) {
    DeviceErrorRecord record = complete(DeviceErrorOp::None, 12, 10, 5);
    record.op = code;
    const std::string message = describe_device_error(record, false);
    CHECK(contains(message, "unknown op (code " + std::to_string(code) + ")"));
    CHECK(contains(message, "value 12 at position 5, outside [0, 10)"));
  }
  CHECK(std::string(device_error_op_name(42)) == "an unknown op");
}

TEST_CASE("take_device_error takes a complete record once, clears it, and leaves one being written") {
  DeviceErrorRecord record = complete(DeviceErrorOp::Gather, 17, 4, 3);
  const auto taken = take_device_error(record);
  REQUIRE(taken.has_value());
  CHECK(taken->op == static_cast<int32_t>(DeviceErrorOp::Gather));
  CHECK(taken->value == 17);
  CHECK(taken->bound == 4);
  CHECK(taken->position == 3);
  CHECK(record.state == kDeviceErrorEmpty);  // the next error can be recorded
  CHECK_FALSE(take_device_error(record).has_value());
  // A kernel that claimed the record but has not finished writing it: not yet reported.
  record.state = kDeviceErrorWriting;
  record.value = 99;
  CHECK_FALSE(take_device_error(record).has_value());
  CHECK(record.state == kDeviceErrorWriting);
  // Once complete, a later error is reported with its own values.
  record = complete(DeviceErrorOp::NllLoss, 8, 2, 6);
  const auto second = take_device_error(record);
  REQUIRE(second.has_value());
  CHECK(describe_device_error(*second, false) == "nll_loss: target 8 at index 6 is out of range [0, 2)");
}

}  // namespace test_device_error
