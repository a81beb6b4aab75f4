// nn::BatchNorm1d across devices: an input on another device than the module is refused by the
// module's own check before a training forward counts the batch, so the running estimates and
// num_batches_tracked stay as they were (the update would otherwise throw midway, after the
// count). Without a GPU the case says why and skips.
#include <doctest/doctest.h>

#include <string>

#include "error_of.h"
#include "runtime/ember.h"
#include "skip_case.h"

namespace test_cuda_batch_norm {

using namespace ember;
using ember::testing::error_of;
using ember::testing::names_line;

TEST_CASE("BatchNorm1d refuses an input on another device before counting the batch") {
  if (!ember::testing::cuda_or_skip()) return;
  nn::BatchNorm1d batch_norm(3);
  batch_norm->to(Device{DeviceType::CUDA, 0});
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { batch_norm(ones({4, 3})); });
  CHECK(message.find("BatchNorm1d: input on cpu but the module's parameters and buffers are on cuda") !=
        std::string::npos);
  CHECK(names_line(message, line));
  CHECK(batch_norm->num_batches_tracked.to(kCPU).item<int64_t>() == 0);
  CHECK(batch_norm->running_mean.to(kCPU).to_vector<float>() == std::vector<float>{0.0f, 0.0f, 0.0f});
}

}  // namespace test_cuda_batch_norm
