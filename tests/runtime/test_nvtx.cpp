// NVTX ranges around dispatched ops: one range per op when on, none when off (the default).
#include <doctest/doctest.h>

#include "runtime/ember.h"
#include "runtime/profiler/nvtx.h"

namespace test_nvtx {

namespace {

using namespace ember;

struct NvtxSwitch {
  explicit NvtxSwitch(bool on) : previous(profiler::nvtx_enabled()) { profiler::set_nvtx_enabled(on); }
  ~NvtxSwitch() { profiler::set_nvtx_enabled(previous); }
  bool previous;
};

TEST_CASE("nvtx: every dispatched op pushes one range when EMBER_NVTX is on") {
  const Tensor a = randn({3, 4});
  const Tensor b = randn({3, 4});
  NvtxSwitch on(true);
  const int64_t before = profiler::nvtx_ranges_pushed();
  const Tensor c = add(a, b);          // one op
  const Tensor d = relu(c.transpose(0, 1));  // a view and an op
  CHECK(profiler::nvtx_ranges_pushed() - before == 3);
  CHECK(d.sizes() == Dims{4, 3});
}

TEST_CASE("nvtx: off pushes nothing") {
  const Tensor a = randn({3, 4});
  NvtxSwitch off(false);
  const int64_t before = profiler::nvtx_ranges_pushed();
  const Tensor c = exp(add(a, a));
  CHECK(profiler::nvtx_ranges_pushed() == before);
  CHECK(c.numel() == 12);
}

TEST_CASE("nvtx: ranges reach the NVTX API exactly when the CUDA toolkit is built in") {
#ifdef EMBER_HAS_CUDA
  CHECK(profiler::nvtx_available());
#else
  CHECK_FALSE(profiler::nvtx_available());
#endif
}

}  // namespace

}  // namespace test_nvtx
