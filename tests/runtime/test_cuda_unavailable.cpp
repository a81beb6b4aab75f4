// The CUDA backend on a machine without a usable GPU (these build machines: toolkit, no driver):
// CUDA reports why it is unavailable, the default device is the CPU, asking for CUDA fails with
// an ember::Error that carries the reason, and the CUDA kernels are attached to their ops.
// On a machine with a GPU these cases do not apply and say so (tools/gpu_check.sh runs there).
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "error_of.h"
#include "runtime/ember.h"
#include "runtime/memory/storage.h"
#include "runtime/ops/registry.h"

namespace test_cuda_unavailable {

using namespace ember;
using ember::testing::error_of;

namespace {

const Device kCuda0{DeviceType::CUDA, 0};

// Runs `body` with EMBER_DEVICE set, restoring the previous value even when body throws.
template <typename Body> void with_ember_device(const char* value, Body body) {
  const char* old = std::getenv("EMBER_DEVICE");
  const std::string saved = old ? old : "";
  setenv("EMBER_DEVICE", value, 1);
  try {
    body();
  } catch (...) {
    old ? setenv("EMBER_DEVICE", saved.c_str(), 1) : unsetenv("EMBER_DEVICE");
    throw;
  }
  old ? setenv("EMBER_DEVICE", saved.c_str(), 1) : unsetenv("EMBER_DEVICE");
}

}  // namespace

TEST_CASE("cuda unavailable: reason, default device and clear errors") {
  std::string why_not;
  if (cuda_is_available(&why_not)) {
    MESSAGE("a CUDA device is available: the no-GPU cases do not apply here (gpu_check.sh covers it)");
    CHECK(why_not.empty());
    return;
  }
  // The reason is the CUDA runtime's own message (or the build's), never empty.
  REQUIRE(!why_not.empty());
  MESSAGE("CUDA is unavailable: " << why_not);
#ifdef EMBER_HAS_CUDA
  CHECK(why_not.find("build of ember has no CUDA") == std::string::npos);
#else
  CHECK(why_not.find("no CUDA backend") != std::string::npos);
#endif
  // Asking twice gives the same answer: the runtime is asked once per process.
  std::string again;
  CHECK_FALSE(cuda_is_available(&again));
  CHECK(again == why_not);

  if (std::getenv("EMBER_DEVICE") == nullptr) CHECK(default_device() == kCPU);
  with_ember_device("cpu", [] { CHECK(default_device() == kCPU); });

  const std::string forced = error_of([] { with_ember_device("cuda", [] { default_device(); }); });
  CHECK(forced.find("EMBER_DEVICE=cuda") != std::string::npos);
  CHECK(forced.find("unavailable") != std::string::npos);
  CHECK(forced.find(why_not) != std::string::npos);
  const std::string bad = error_of([] { with_ember_device("gpu", [] { default_device(); }); });
  CHECK(bad.find("cannot parse 'gpu'") != std::string::npos);

  // Moving a tensor or allocating on CUDA names the device and the reason.
  const Tensor host = arange(0.0, 6.0, 1.0).reshape({2, 3});
  const std::string moved = error_of([&] { (void)host.to(kCuda0); });
  CHECK(moved.find("cuda:0") != std::string::npos);
  CHECK(moved.find(why_not) != std::string::npos);
  const std::string allocated = error_of([] { (void)empty({4}, {.device = Device(DeviceType::CUDA, 1)}); });
  CHECK(allocated.find("cuda:1") != std::string::npos);
  CHECK_THROWS_AS((void)memory_stats(kCuda0), Error);
  // Pinned host memory needs the driver too; an ordinary tensor is not pinned.
  CHECK_FALSE(host.is_pinned());
  const std::string pinned = error_of([&] { (void)host.pin_memory(); });
  CHECK(pinned.find("pin_memory") != std::string::npos);
  CHECK(pinned.find(why_not) != std::string::npos);
  // The CPU keeps working after the failed CUDA requests.
  CHECK(host.to(kCPU).sum().item<double>() == doctest::Approx(15.0));
}

TEST_CASE("cuda kernels are attached to the ops the CPU files define") {
#ifdef EMBER_HAS_CUDA
  for (const std::string name : {"empty", "full", "fill_", "clone", "to_dtype", "to_device", "add", "sub", "mul", "div",
                                 "add_scalar", "mul_scalar"}) {
    CAPTURE(name);
    CHECK(static_cast<bool>(registry().get(name).kernel_for(kCuda0)));
  }
  // to_device also runs for CPU inputs (host-to-device copies start on the CPU).
  CHECK(static_cast<bool>(registry().get("to_device").kernel_for(kCPU)));
  // Every set_kernel named an op that exists.
  CHECK(registry().pending_kernel_ops().empty());
  // The GEMM ops run through cuBLASLt (runtime/cuda/gemm_cuda_ops.cpp).
  for (const std::string name : {"matmul", "mm", "bmm", "linear"}) {
    CAPTURE(name);
    CHECK(static_cast<bool>(registry().get(name).kernel_for(kCuda0)));
  }
#else
  CHECK_FALSE(static_cast<bool>(registry().get("add").kernel_for(kCuda0)));
  CHECK(registry().pending_kernel_ops().empty());
#endif
}

}  // namespace test_cuda_unavailable
