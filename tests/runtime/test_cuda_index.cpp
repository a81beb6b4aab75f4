// CUDA gathers, scatter-adds, cat and the fused optimizer steps against the CPU, for what the
// conformance suite cannot see: device-side index checking, atomic accumulation under heavy
// repetition, cat with more inputs than one launch takes, misaligned (offset) sources, int32
// indices, and several optimizer steps in a row. Without a GPU each case says so and stops.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "runtime/dispatch.h"
#include "runtime/ember.h"
#include "cuda_test_util.h"
#include "runtime/optim/fused_steps.h"
#ifdef EMBER_HAS_CUDA
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/index_cuda_common.h"
#endif

namespace test_cuda_index {

using namespace ember;

namespace {

using cuda_test::kCuda0;

// The references are made on the CPU explicitly: on a GPU machine the default device is CUDA, and a
// factory without a device would make every "CPU" reference a CUDA tensor.
const TensorOptions kOnCpu{.device = kCPU};
const TensorOptions kInt64OnCpu{.dtype = kInt64, .device = kCPU};

// Largest |a - b| over all elements, with b brought back from the device; infinity where only
// one side is NaN (EMBER_POISON_OUTPUTS leaves NaN in an element a kernel never wrote, and
// std::max would drop it).
double max_difference(const Tensor& a, const Tensor& b) {
  REQUIRE(a.sizes() == b.sizes());
  const std::vector<double> x = a.to(kFloat64).to_vector<double>();
  const std::vector<double> y = b.to(kCPU).to(kFloat64).to_vector<double>();
  double worst = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i]) || std::isnan(y[i])) {
      if (std::isnan(x[i]) != std::isnan(y[i])) return std::numeric_limits<double>::infinity();
      continue;
    }
    worst = std::max(worst, std::abs(x[i] - y[i]));
  }
  return worst;
}

Tensor call_op(const char* name, std::initializer_list<Tensor> inputs, const Attrs& attrs) {
  return dispatch_one(lookup_op(name), inputs, attrs);
}

}  // namespace

TEST_CASE("cuda embedding_backward and index_add sum heavily repeated indices like the CPU") {
  if (!ember::testing::cuda_or_skip()) return;
  const Tensor grad = randn({4096, 40}, kOnCpu);
  const Tensor indices = randint(0, 7, {4096}, kInt64OnCpu);  // ~585 additions per row
  const Attrs attrs{{"num_weights", int64_t{7}}};
  const Tensor expected = call_op("embedding_backward", {grad, indices}, attrs);
  const Tensor actual = call_op("embedding_backward", {grad.to(kCuda0), indices.to(kCuda0)}, attrs);
  CHECK(max_difference(expected, actual) < 1e-3);
  // int32 indices take the same path without widening.
  const Tensor actual32 = call_op("embedding_backward", {grad.to(kCuda0), indices.to(kInt32).to(kCuda0)}, attrs);
  CHECK(max_difference(expected, actual32) < 1e-3);
  // bf16 accumulates in fp32 and rounds once.
  const Tensor half = call_op("embedding_backward", {grad.to(kBFloat16).to(kCuda0), indices.to(kCuda0)}, attrs);
  CHECK(max_difference(expected, half) < 0.5);

  const Tensor self = randn({3, 7, 5}, kOnCpu);
  const Tensor source = randn({3, 300, 5}, kOnCpu);
  const Tensor index = randint(0, 7, {300}, kInt64OnCpu);
  const Tensor expected_add = call_op("index_add", {self, index, source}, {{"dim", int64_t{1}}});
  const Tensor actual_add =
      call_op("index_add", {self.to(kCuda0), index.to(kCuda0), source.to(kCuda0)}, {{"dim", int64_t{1}}});
  CHECK(max_difference(expected_add, actual_add) < 1e-4);
}

TEST_CASE("cuda cat copies more inputs than one launch takes, mixed dtypes and offsets") {
  if (!ember::testing::cuda_or_skip()) return;
  std::vector<Tensor> parts;
  std::vector<Tensor> device_parts;
  for (int i = 0; i < 45; ++i) {
    const Tensor part = randn({3, 1 + i % 4, 5}, kOnCpu);
    parts.push_back(part);
    device_parts.push_back(part.to(kCuda0));
  }
  CHECK(max_difference(cat(parts, 1), cat(device_parts, 1)) == 0.0);
  // A float64 part promotes the result; a narrowed part starts at an odd offset (4-byte words).
  const Tensor wide = randn({3, 2, 5}, {.dtype = kFloat64, .device = kCPU});
  const Tensor base = randn({3, 7, 5}, kOnCpu);
  const Tensor narrowed = base.narrow(1, 1, 3);
  CHECK(max_difference(cat({parts[0], wide, narrowed}, 1),
                       cat({device_parts[0], wide.to(kCuda0), base.to(kCuda0).narrow(1, 1, 3)}, 1)) == 0.0);
  // Along dim 0 with rows of 3 floats: pieces start at odd offsets, so the copy uses 4-byte words.
  std::vector<Tensor> rows;
  std::vector<Tensor> device_rows;
  for (int i = 0; i < 40; ++i) {
    rows.push_back(randn({1 + i % 3, 3}, kOnCpu));
    device_rows.push_back(rows.back().to(kCuda0));
  }
  CHECK(max_difference(cat(rows, 0), cat(device_rows, 0)) == 0.0);
}

TEST_CASE("cuda index_select and embedding copy rows from offset sources and int32 indices") {
  if (!ember::testing::cuda_or_skip()) return;
  const Tensor base = randn({1001, 33}, kOnCpu);
  const Tensor offset_rows = base.narrow(0, 1, 1000);  // storage offset 33 floats: 4-byte words only
  const Tensor index = randint(0, 1000, {777}, kInt64OnCpu);
  CHECK(max_difference(index_select(offset_rows, 0, index),
                       index_select(base.to(kCuda0).narrow(0, 1, 1000), 0, index.to(kCuda0))) == 0.0);
  const Tensor fives = full({9}, 5, kInt64OnCpu);  // inner 1: one-word rows
  CHECK(max_difference(index_select(base, 1, fives), index_select(base.to(kCuda0), 1, fives.to(kCuda0))) == 0.0);
  const Tensor weight = randn({50, 64}, kOnCpu);
  const Tensor ids = randint(0, 50, {6, 11}, kInt64OnCpu);
  CHECK(max_difference(embedding(weight, ids), embedding(weight.to(kCuda0), ids.to(kInt32).to(kCuda0))) == 0.0);
  const Tensor a = randn({6, 9, 4}, kOnCpu);
  const Tensor gather_index = randint(0, 9, {6, 20, 4}, kInt64OnCpu);
  CHECK(max_difference(gather(a, 1, gather_index), gather(a.to(kCuda0), 1, gather_index.to(kCuda0))) == 0.0);
}

#ifdef EMBER_HAS_CUDA
// Host-side: runs on every CUDA build, GPU or not.
TEST_CASE("index, join and optimizer ops have CUDA kernels attached") {
  for (const char* name : {"cat", "embedding", "embedding_backward", "gather", "index_add", "index_select",
                           "scatter_add", "one_hot", "adam_step_", "sgd_step_"})
    CHECK_MESSAGE(static_cast<bool>(registry().get(name).kernel_for(kCuda0)), name);
  const bool before = cuda::index_checking_enabled();
  cuda::set_index_checking(!before);
  CHECK(cuda::index_checking_enabled() == !before);
  cuda::set_index_checking(before);
}

TEST_CASE("cuda index checking reports out-of-range indices at the op when enabled, at the next sync when not") {
  if (!ember::testing::cuda_or_skip()) return;
  const Tensor weight = randn({6, 3}, kOnCpu).to(kCuda0);
  const Tensor bad = from_vector<int64_t>({1, 9, 2}, {3}, kInt64OnCpu).to(kCuda0);
  cuda_test::IndexCheckingScope checking(true);
  CHECK_THROWS_WITH_AS(embedding(weight, bad), doctest::Contains("embedding: index 9 is out of range"), Error);
  CHECK_THROWS_WITH_AS(index_select(weight, 1, bad), doctest::Contains("index_select: index 9"), Error);
  CHECK_THROWS_WITH_AS(one_hot(bad, 4), doctest::Contains("one_hot: class index 9"), Error);
  CHECK_THROWS_WITH_AS(call_op("embedding_backward", {randn({3, 3}, kOnCpu).to(kCuda0), bad},
                               {{"num_weights", int64_t{4}}}),
                       doctest::Contains("embedding_backward: index 9"), Error);
  CHECK(max_difference(embedding(weight.to(kCPU), from_vector<int64_t>({1, 5}, {2}, kInt64OnCpu)),
                       embedding(weight, from_vector<int64_t>({1, 5}, {2}, kInt64OnCpu).to(kCuda0))) == 0.0);
  checking.set(false);
  // Unchecked: the bad row reads as zeros, the good rows are right, and the error comes at the sync.
  const Tensor gathered = embedding(weight, bad);
  CHECK_THROWS_WITH_AS(synchronize(kCuda0), doctest::Contains("embedding: index 9 at position 1"), Error);
  const std::vector<float> rows = gathered.to(kCPU).to_vector<float>();
  const std::vector<float> host = weight.to(kCPU).to_vector<float>();
  CHECK(rows[0] == host[3]);
  CHECK(rows[3] == 0.0f);
  CHECK(rows[6] == host[6]);
}

// Nothing to copy (rows of zero width, no outer slices), yet the CPU rejects the bad index: so
// does CUDA, from a check-only kernel.
TEST_CASE("cuda index checking covers selections and adds that copy nothing") {
  if (!ember::testing::cuda_or_skip()) return;
  const Tensor bad = from_vector<int64_t>({1, 9, 2}, {3}, kInt64OnCpu);
  const cuda_test::IndexCheckingScope checking(true);
  for (const Device device : {Device(kCPU), kCuda0}) {
    INFO("on " << device);
    const Tensor on = bad.to(device);
    CHECK_THROWS_WITH_AS(embedding(randn({6, 0}, kOnCpu).to(device), on), doctest::Contains("embedding: index 9"),
                         Error);
    CHECK_THROWS_WITH_AS(index_select(randn({0, 6}, kOnCpu).to(device), 1, on),
                         doctest::Contains("index_select: index 9"), Error);
    CHECK_THROWS_WITH_AS(call_op("index_add", {randn({6, 0}, kOnCpu).to(device), on, randn({3, 0}, kOnCpu).to(device)},
                                 {{"dim", int64_t{0}}}),
                         doctest::Contains("index_add: index 9"), Error);
  }
}
#endif

TEST_CASE("cuda sgd_step_ and adam_step_ follow the CPU over several steps, strided state included") {
  if (!ember::testing::cuda_or_skip()) return;
  NoGradGuard no_grad;
  const Tensor param = randn({37, 19}, kOnCpu);
  Tensor cpu_param = param.clone(), cpu_avg = zeros({37, 19}, kOnCpu), cpu_sq = zeros({37, 19}, kOnCpu);
  Tensor cpu_max = zeros({37, 19}, kOnCpu);
  Tensor gpu_param = param.to(kCuda0), gpu_avg = zeros({37, 19}, kOnCpu).to(kCuda0);
  Tensor gpu_max = zeros({37, 19}, kOnCpu).to(kCuda0);
  Tensor gpu_sq = zeros({19, 37}, kOnCpu).to(kCuda0).transpose(0, 1);  // a strided state tensor
  Tensor cpu_buffer = zeros({37, 19}, kOnCpu), gpu_buffer = zeros({37, 19}, kOnCpu).to(kCuda0);
  for (int64_t step = 1; step <= 5; ++step) {
    const Tensor grad = randn({37, 19}, kOnCpu);
    const optim::AdamStepArgs adam{.lr = 0.01, .weight_decay = 0.1, .step = step, .amsgrad = true, .decoupled = true};
    optim::adam_step_(cpu_param, grad, cpu_avg, cpu_sq, cpu_max, adam);
    optim::adam_step_(gpu_param, grad.to(kCuda0), gpu_avg, gpu_sq, gpu_max, adam);
    const optim::SgdStepArgs sgd{.lr = 0.05, .momentum = 0.9, .dampening = 0.1, .weight_decay = 0.01,
                                 .nesterov = false, .first_step = step == 1};
    optim::sgd_step_(cpu_param, grad, cpu_buffer, sgd);
    optim::sgd_step_(gpu_param, grad.to(kCuda0), gpu_buffer, sgd);
  }
  CHECK(max_difference(cpu_param, gpu_param) < 1e-5);
  CHECK(max_difference(cpu_sq, gpu_sq) < 1e-5);
  CHECK(max_difference(cpu_max, gpu_max) < 1e-5);
  CHECK(max_difference(cpu_buffer, gpu_buffer) < 1e-5);
}

#ifdef EMBER_HAS_CUDA
// Large shapes: results checked against the CPU, and the achieved bandwidth reported for the
// H200 run (bytes read + written per op over the time of 5 calls). Sizes stay near 16 MB so the
// compute-sanitizer pass of gpu_check.sh stays short; the numbers are indicative only.
TEST_CASE("cuda gathers and cat on large shapes are correct, bandwidth is reported") {
  if (!ember::testing::cuda_or_skip()) return;
  const Tensor weight = randn({8192, 512}, kOnCpu);
  const Tensor ids = randint(0, 8192, {8192}, kInt64OnCpu);
  const Tensor a = randn({2048, 2048}, kOnCpu);
  const Tensor b = randn({2048, 1024}, kOnCpu);
  const Tensor gpu_weight = weight.to(kCuda0), gpu_ids = ids.to(kCuda0), gpu_a = a.to(kCuda0), gpu_b = b.to(kCuda0);
  CHECK(max_difference(embedding(weight, ids), embedding(gpu_weight, gpu_ids)) == 0.0);
  CHECK(max_difference(cat({a, b}, 1), cat({gpu_a, gpu_b}, 1)) == 0.0);
  const Tensor gather_index = randint(0, 2048, {2048, 512}, kInt64OnCpu);
  const Tensor gpu_gather_index = gather_index.to(kCuda0);
  CHECK(max_difference(gather(a, 1, gather_index), gather(gpu_a, 1, gpu_gather_index)) == 0.0);
  const Tensor columns = randint(0, 2048, {512}, kInt64OnCpu);
  const Tensor gpu_columns = columns.to(kCuda0);
  CHECK(max_difference(index_select(a, 1, columns), index_select(gpu_a, 1, gpu_columns)) == 0.0);
  const auto bandwidth = [&](const char* label, double bytes, auto&& body) {
    body();
    const cuda::Stream stream = cuda::current_stream(kCuda0);
    cuda::Event start(true), stop(true);
    start.record(stream);
    for (int i = 0; i < 5; ++i) body();
    stop.record(stream);
    stop.synchronize();
    const double seconds = start.elapsed_milliseconds(stop) / 1e3 / 5;
    MESSAGE(label << ": " << seconds * 1e6 << " us, " << bytes / seconds / 1e9 << " GB/s");
  };
  bandwidth("embedding [8192 of 8192x512] f32", 2.0 * 8192 * 512 * 4, [&] { embedding(gpu_weight, gpu_ids); });
  bandwidth("index_select dim 1 [2048x2048] -> 512 cols", 2.0 * 2048 * 512 * 4,
            [&] { index_select(gpu_a, 1, gpu_columns); });
  bandwidth("cat dim 1 [2048x2048]+[2048x1024] f32", 2.0 * 2048 * 3072 * 4, [&] { cat({gpu_a, gpu_b}, 1); });
  bandwidth("cat dim 0 [2048x2048]+[2048x2048] f32", 2.0 * 4096 * 2048 * 4, [&] { cat({gpu_a, gpu_a}, 0); });
  bandwidth("gather dim 1 [2048x512] from [2048x2048]", 3.0 * 2048 * 512 * 4,
            [&] { gather(gpu_a, 1, gpu_gather_index); });
}
#endif

}  // namespace test_cuda_index
