// Core tensor, dispatcher and autograd behaviour.
#include <doctest/doctest.h>

#include "runtime/ember.h"

namespace test_core {

using namespace ember;

TEST_CASE("add broadcasts and backpropagates to both inputs") {
  Tensor a = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}).requires_grad_();
  Tensor b = from_vector<float>({10, 20, 30}, {3}).requires_grad_();
  Tensor c = add(a, b, 2.0);
  CHECK(c.to_vector<float>() == std::vector<float>{21, 42, 63, 24, 45, 66});
  c.sum().backward();
  CHECK(a.grad().to_vector<float>() == std::vector<float>(6, 1.0f));
  CHECK(b.grad().to_vector<float>() == std::vector<float>{4, 4, 4});
}

TEST_CASE("Device::parse takes cpu, cuda and cuda:N with plain decimal digits only") {
  CHECK(Device::parse("cpu") == kCPU);
  CHECK(Device::parse("cuda") == Device(DeviceType::CUDA, 0));
  CHECK(Device::parse("cuda:0") == Device(DeviceType::CUDA, 0));
  CHECK(Device::parse("cuda:17") == Device(DeviceType::CUDA, 17));
  CHECK(Device::parse("cuda:1023") == Device(DeviceType::CUDA, 1023));
  // Signs, spaces and leading zeros are typos rather than device numbers (as in PyTorch).
  for (const char* text : {"cuda: 1", "cuda:+1", "cuda:-0", "cuda:01", "cuda:\t2", "cuda:1 ", "cuda:", "cuda:1024",
                           "cuda:99999999999", "gpu", "CUDA"}) {
    CAPTURE(text);
    const std::string expected = fmt::format("cannot parse '{}'", text);
    CHECK_THROWS_WITH_AS((void)Device::parse(text), doctest::Contains(expected.c_str()), Error);
  }
}

TEST_CASE("a CPU device index other than 0 is refused, as PyTorch's, instead of a tensor no op accepts") {
  const Device second_cpu(DeviceType::CPU, 1);
  CHECK_THROWS_WITH_AS(zeros({2}, {.device = second_cpu}),
                       doctest::Contains("allocator: the CPU device index must be 0, got 1"), Error);
  CHECK_THROWS_WITH_AS(ones({2}, {.device = kCPU}).to(second_cpu), doctest::Contains("CPU device index must be 0"),
                       Error);
  float data[2] = {1.0f, 2.0f};
  CHECK_THROWS_WITH_AS(from_blob(data, {2}, kFloat32, Device(DeviceType::CPU, -1)),
                       doctest::Contains("from_blob: the CPU device index must be 0, got -1"), Error);
  CHECK(add(zeros({2}, {.device = kCPU}), ones({2}, {.device = Device(DeviceType::CPU, 0)})).device() == kCPU);
}

}  // namespace test_core
