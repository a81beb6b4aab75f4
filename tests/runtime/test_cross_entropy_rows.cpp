// cross_entropy's CPU kernel over many rows (it goes through blocks of rows laid out class by
// class, kernels/cpu/cross_entropy_kernels.cpp): values and gradients against float64, the same
// for any thread count; and cross_entropy_with_backward, which the compile stage's loss fusion
// uses, against the two ops it replaces, bit for bit.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>

#include "loss_reference.h"
#include "numeric_check.h"

namespace test_cross_entropy_rows {

using namespace ember;
using namespace ember::testing;

TEST_CASE("cross_entropy over many rows: values and gradients match float64, for any thread count") {
  const int threads = get_num_threads();
  // 5000 x 10: 13 blocks of up to 409 rows, the last one partial; 8 x 5000: a block per row;
  // 2 x 300000: rows whose scratch is given back after use; all three big enough to run in
  // parallel. 700 x 64 (transposed logits) runs serially.
  const std::vector<Tensor> inputs{random_tensor({5000, 10}, 260, kFloat32), random_tensor({8, 5000}, 261, kFloat32),
                                   random_tensor({2, 300000}, 263, kFloat32),
                                   random_tensor({64, 700}, 262, kFloat32).t()};
  for (const Tensor& logits : inputs) {
    const int64_t rows = logits.sizes()[0], classes = logits.sizes()[1];
    INFO("logits " << rows << " x " << classes);
    std::vector<int64_t> labels(static_cast<size_t>(rows));
    for (int64_t i = 0; i < rows; ++i) labels[i] = i % 17 == 5 ? -100 : (i * 7919) % classes;
    std::vector<std::vector<float>> losses, gradients;
    for (int thread_count : {1, 3}) {
      set_num_threads(thread_count);
      const Tensor input = logits.detach().requires_grad_();
      const Tensor per_row = cross_entropy(input, targets(labels), {.reduction = Reduction::None});
      const Tensor mean = cross_entropy(input, targets(labels));
      mean.backward();
      losses.push_back(per_row.to_vector<float>());
      losses.push_back(mean.contiguous().to_vector<float>());
      gradients.push_back(input.grad().contiguous().to_vector<float>());
    }
    set_num_threads(threads);
    CHECK(losses[0] == losses[2]);
    CHECK(losses[1] == losses[3]);
    CHECK(gradients[0] == gradients[1]);
    check_close(std::vector<double>(losses[0].begin(), losses[0].end()),
                reference_cross_entropy(logits, labels, {.reduction = Reduction::None}), 2e-6);
    check_close(std::vector<double>(losses[1].begin(), losses[1].end()), reference_cross_entropy(logits, labels, {}),
                2e-6);
    // d mean / d z = (softmax - one_hot(target)) / counted, zero on ignored rows.
    const std::vector<double> log_probs = reference_softmax(logits, 1, true);
    const auto is_counted = [](int64_t t) { return t >= 0; };
    const double counted = static_cast<double>(std::count_if(labels.begin(), labels.end(), is_counted));
    std::vector<double> expected(log_probs.size(), 0.0);
    for (int64_t i = 0; i < rows; ++i) {
      if (labels[i] < 0) continue;
      for (int64_t c = 0; c < classes; ++c)
        expected[i * classes + c] = (std::exp(log_probs[i * classes + c]) - (c == labels[i] ? 1.0 : 0.0)) / counted;
    }
    check_close(std::vector<double>(gradients[0].begin(), gradients[0].end()), expected, 1e-7);
  }
}

// Compiled steps run cross_entropy_with_backward in place of the pair (graph/loss_fusion.cpp).

TEST_CASE("cross_entropy_with_backward gives the bits of cross_entropy and cross_entropy_backward") {
  static const OpDef& forward_op = lookup_op("cross_entropy");
  static const OpDef& backward_op = lookup_op("cross_entropy_backward");
  static const OpDef& fused_op = lookup_op("cross_entropy_with_backward");
  const std::vector<Tensor> inputs{random_tensor({6, 7}, 270, kFloat32), random_tensor({7, 6}, 271, kFloat32).t(),
                                   random_tensor({6, 7}, 272, kFloat64), random_tensor({6, 7}, 273, kBFloat16),
                                   random_tensor({5000, 10}, 274, kFloat32)};
  for (const Tensor& logits : inputs) {
    const int64_t rows = logits.sizes()[0], classes = logits.sizes()[1];
    std::vector<int64_t> labels(static_cast<size_t>(rows));
    for (int64_t i = 0; i < rows; ++i) labels[i] = i % 5 == 2 ? 4 : (i * 31) % classes;
    const Tensor target = targets(labels);
    for (Reduction reduction : {Reduction::None, Reduction::Mean, Reduction::Sum}) {
      for (double smoothing : {0.0, 0.25}) {
        INFO(logits.dtype() << " " << rows << " x " << classes << " reduction " << static_cast<int>(reduction)
                            << " smoothing " << smoothing);
        const Attrs attrs{{"reduction", static_cast<int64_t>(reduction)}, {"ignore_index", int64_t{4}},
                          {"label_smoothing", smoothing}};
        const Tensor grad = reduction == Reduction::None ? random_tensor({rows}, 275, logits.dtype())
                                                         : full({}, 0.75, {.dtype = logits.dtype()});
        const std::array<Tensor, 3> fused_inputs{grad, logits, target};
        const TensorList fused = dispatch({fused_op, fused_inputs, attrs});
        REQUIRE(fused.size() == 2);
        const Tensor loss = dispatch_one(forward_op, {logits, target}, attrs);
        const Tensor grad_logits = dispatch_one(backward_op, {grad, logits, target}, attrs);
        CHECK(fused[0].sizes() == loss.sizes());
        CHECK(fused[1].sizes() == grad_logits.sizes());
        CHECK(values_of(fused[0]) == values_of(loss));
        CHECK(values_of(fused[1]) == values_of(grad_logits));
      }
    }
  }
  // Its shape rule checks the gradient against the loss, naming the op.
  const Tensor logits = random_tensor({3, 4}, 276, kFloat32);
  const Attrs mean{{"reduction", int64_t{1}}, {"ignore_index", int64_t{-100}}, {"label_smoothing", 0.0}};
  const std::array<Tensor, 3> bad{random_tensor({3}, 277, kFloat32), logits, targets({0, 1, 2})};
  CHECK_THROWS_WITH(dispatch({fused_op, bad, mean}), doctest::Contains("cross_entropy_with_backward: grad"));
}

}  // namespace test_cross_entropy_rows
