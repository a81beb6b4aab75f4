// Pointwise micro-benchmark: representative pointwise kernels over 1M float32 elements, as
// microseconds per call, GB/s of memory traffic and ns per element. Memory-bound ops (relu, add,
// where) should run near the copy's bandwidth; the activations show whether their loops vectorize.
#include <chrono>
#include <vector>

#include "tools/ember-bench/bench.h"

namespace ember::bench {

namespace {

struct PointwiseCase {
  const char* name;
  double bytes_per_element;  // reads plus writes
  std::function<Tensor()> run;
};

double median_us(const std::function<Tensor()>& run, int repeats) {
  for (int i = 0; i < 3; ++i) (void)run();  // warm the allocator's cache
  StepTimes times;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    (void)run();
    const auto elapsed = std::chrono::steady_clock::now() - start;
    times.step_us.push_back(std::chrono::duration<double, std::micro>(elapsed).count());
  }
  return times.median();
}

}  // namespace

nlohmann::json run_pointwise_throughput(const RunOptions& options) {
  set_num_threads(options.threads);
  constexpr int64_t kElements = int64_t{1} << 20;
  const Tensor x = randn({kElements}, {.device = kCPU});
  const Tensor y = randn({kElements}, {.device = kCPU});
  const Tensor mask = gt(x, y);
  const Tensor zero = scalar_tensor(0.0, {.device = kCPU});
  const Tensor matrix = randn({1024, 1024}, {.device = kCPU});
  const Tensor bias = randn({1024}, {.device = kCPU});
  const Tensor images = randn({64, 16, 32, 32}, {.device = kCPU});
  const Tensor pairs = randn({256, 2, 64, 32}, {.device = kCPU});
  const Tensor rows_of_16 = randn({64, 1024, 16}, {.device = kCPU});
  const Tensor rows_of_1 = randn({64, 16384}, {.device = kCPU});
  // A fixed scattered order (37 is coprime to both lengths): each index once.
  const auto scattered = [](int64_t length) {
    std::vector<int64_t> order(static_cast<size_t>(length));
    for (int64_t i = 0; i < length; ++i) order[static_cast<size_t>(i)] = i * 37 % length;
    return from_vector<int64_t>(order, {length}, {.dtype = kInt64});
  };
  const Tensor row_order = scattered(1024), element_order = scattered(16384);
  static const OpDef& gelu_backward_op = lookup_op("gelu_backward");
  const std::vector<PointwiseCase> cases{
      {"clone", 8, [&] { return clone(x); }},
      {"relu", 8, [&] { return relu(x); }},
      {"add", 12, [&] { return add(x, y); }},
      {"mul_scalar", 8, [&] { return mul(x, 0.5); }},
      {"add row bias [1024,1024]+[1024]", 8, [&] { return add(matrix, bias); }},
      {"where", 13, [&] { return where(mask, x, y); }},
      {"where with 0-d zero", 9, [&] { return where(mask, x, zero); }},
      {"exp", 8, [&] { return ember::exp(x); }},
      {"sigmoid", 8, [&] { return sigmoid(x); }},
      {"tanh", 8, [&] { return ember::tanh(x); }},
      {"gelu", 8, [&] { return gelu(x); }},
      {"gelu tanh", 8, [&] { return gelu(x, true); }},
      {"silu", 8, [&] { return silu(x); }},
      {"leaky_relu", 8, [&] { return leaky_relu(x); }},
      {"elu", 8, [&] { return elu(x); }},
      {"softplus", 8, [&] { return softplus(x); }},
      {"hardtanh", 8, [&] { return nn::functional::hardtanh(x); }},
      {"hardswish", 8, [&] { return nn::functional::hardswish(x); }},
      {"hardsigmoid", 8, [&] { return nn::functional::hardsigmoid(x); }},
      {"mish", 8, [&] { return nn::functional::mish(x); }},
      {"logsigmoid", 8, [&] { return nn::functional::logsigmoid(x); }},
      {"expm1", 8, [&] { return ember::expm1(x); }},
      {"erf", 8, [&] { return ember::erf(x); }},
      {"sin", 8, [&] { return ember::sin(x); }},
      {"round", 8, [&] { return ember::round(x); }},
      {"gelu_backward", 12, [&] { return dispatch_one(gelu_backward_op, {y, x}, {{"tanh", false}}); }},
      {"relu of a transpose", 8, [&] { return relu(matrix.t()); }},
      // Strided copies with short runs, as around channels-last convolutions: a run per C values.
      {"NCHW->NHWC copy [64,16,32,32]", 8, [&] { return contiguous(permute(images, {0, 2, 3, 1})); }},
      {"NCHW->NHWC copy [256,2,64,32]", 8, [&] { return contiguous(permute(pairs, {0, 2, 3, 1})); }},
      // Gathers as a convolution's windows: rows of C = 16 channels, or of one element.
      {"index_select rows of 16 [64,1024,16]", 8, [&] { return index_select(rows_of_16, 1, row_order); }},
      {"index_select rows of 1 [64,16384]", 8, [&] { return index_select(rows_of_1, 1, element_order); }},
  };
  const int repeats = std::max(5, options.steps / 4);
  nlohmann::json results = nlohmann::json::array();
  for (const PointwiseCase& c : cases) {
    const double us = median_us(c.run, repeats);
    results.push_back({{"op", c.name},
                       {"us", us},
                       {"gb_per_s", c.bytes_per_element * static_cast<double>(kElements) / (us * 1e3)},
                       {"ns_per_element", us * 1e3 / static_cast<double>(kElements)}});
  }
  return {{"benchmark", "pointwise"}, {"dtype", "float32"}, {"elements", kElements},
          {"threads", options.threads}, {"repeats", repeats}, {"ops", results}};
}

}  // namespace ember::bench
