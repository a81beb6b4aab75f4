// ember::compile of a training step through nn::EmbeddingBag in each mode, 1-D input with offsets
// and 2-D input: embedding_bag reads nothing on the host inside a capture, so the step is captured
// whole (fullgraph), and its outputs and trained tables equal eager's step by step, with indices
// and offsets that change between steps; a captured call takes offsets as PyTorch's CUDA kernels do.
#include <doctest/doctest.h>

#include <memory>

#include "fusion_test_util.h"
#include "graph/compile.h"
#include "graph_test_util.h"
#include "runtime/nn/nn.h"
#include "runtime/optim/sgd.h"

namespace test_compile_embedding_bag {

using namespace ember;
namespace F = ember::nn::functional;
using Mode = nn::EmbeddingBagMode;

namespace {

struct BagModel {
  nn::EmbeddingBag bags{nullptr};
  nn::Linear head{nullptr};
  std::unique_ptr<optim::SGD> optimizer;

  explicit BagModel(Mode mode) {
    manual_seed(41);
    bags = nn::EmbeddingBag(10, 4, {.mode = mode, .padding_idx = 0});
    head = nn::Linear(4, 1);
    std::vector<Tensor> parameters = bags->parameters();
    for (const Tensor& parameter : head->parameters()) parameters.push_back(parameter);
    optimizer = std::make_unique<optim::SGD>(parameters, optim::SGDOptions{.lr = 0.1});
  }

  Tensor step(const Tensor& input, const Tensor& offsets) {
    optimizer->zero_grad();
    const Tensor out = head->forward(offsets.defined() ? bags(input, offsets) : bags(input));
    const Tensor loss = sum(mul(out, out));
    loss.backward();
    optimizer->step();
    return out.detach();
  }
};

}  // namespace

TEST_CASE("compile: a step through EmbeddingBag in each mode is captured whole and equals eager") {
  for (Mode mode : {Mode::Sum, Mode::Mean, Mode::Max}) {
    for (bool two_dims : {false, true}) {
      INFO("mode " << nn::embedding_bag_mode_name(mode) << (two_dims ? ", 2-D input" : ", 1-D input"));
      BagModel eager(mode), compiled(mode);
      // The offsets are an argument of the 1-D step; the 2-D step takes none.
      auto one_dim =
          ember::compile([&](const Tensor& input, const Tensor& offsets) { return compiled.step(input, offsets); },
                         {.fullgraph = true});
      auto two_dim =
          ember::compile([&](const Tensor& input) { return compiled.step(input, Tensor{}); }, {.fullgraph = true});
      for (int step = 0; step < 5; ++step) {
        INFO("step " << step);
        manual_seed(700 + static_cast<uint64_t>(step));
        // 12 indices (0 is the padding); 1-D: offsets of 4 bags, one of them empty, moving with the step.
        const Tensor input = randint(0, 10, two_dims ? Dims{4, 3} : Dims{12});
        const Tensor offsets = two_dims ? Tensor{} : from_vector<int64_t>({0, step % 3, 5, 5});
        const Tensor compiled_out = two_dims ? two_dim(input) : one_dim(input, offsets);
        const Tensor eager_out = eager.step(input, offsets);
        CHECK(graph_test::max_relative_error(compiled_out, eager_out) <= 1e-5);
      }
      CHECK((two_dims ? two_dim.state().replays() : one_dim.state().replays()) >= 3);
      graph_test::check_same_values(compiled.optimizer->param_groups()[0].params,
                                    eager.optimizer->param_groups()[0].params);
    }
  }
}

TEST_CASE("compile: a captured embedding_bag takes a first offset past 0 as 0, as PyTorch's CUDA kernels") {
  // Inside a capture the offsets are not read on the host (eager CPU refuses offsets[0] != 0): the
  // first bag then starts at 0, as PyTorch's CUDA kernels force it ("forces first offset to be 0
  // instead of asserting on it", EmbeddingBag.cu), rather than failing inside an index_add.
  NoGradGuard no_grad;
  manual_seed(43);
  const Tensor table = randn({6, 3});
  const Tensor input = from_vector<int64_t>({4, 1, 5, 1, 0, 3, 2});
  const Tensor offsets = from_vector<int64_t>({0, 3, 3, 5});
  for (Mode mode : {Mode::Sum, Mode::Mean, Mode::Max}) {
    INFO("mode " << nn::embedding_bag_mode_name(mode));
    const auto bags = [&](const Tensor& indices, const Tensor& starts) {
      return F::embedding_bag(table, indices, {.offsets = starts, .mode = mode, .padding_idx = 5});
    };
    auto compiled = ember::compile(bags, {.fullgraph = true});
    for (int call = 0; call < 3; ++call) CHECK(graph_test::bit_equal(compiled(input, offsets), bags(input, offsets)));
    // The first call with the new offsets tensor is traced (a capture), the second replays it.
    const int replays = compiled.state().replays();
    const Tensor late_start = from_vector<int64_t>({2, 3, 3, 5});
    for (int call = 0; call < 2; ++call)
      CHECK(graph_test::bit_equal(compiled(input, late_start), bags(input, offsets)));
    CHECK(compiled.state().replays() == replays + 1);
  }
}

}  // namespace test_compile_embedding_bag
