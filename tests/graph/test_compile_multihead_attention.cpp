// ember::compile of training steps through nn::MultiheadAttention (both of its paths, a key
// padding mask, bias_k / bias_v, add_zero_attn), grouped-query scaled_dot_product_attention and a
// pre-norm nn::Transformer with causal and padding masks: captured whole (fullgraph: nothing reads
// values under a capture) and equal to eager step by step.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>

#include "fusion_test_util.h"
#include "graph/compile.h"
#include "runtime/nn/nn.h"
#include "runtime/optim/adam.h"

namespace test_compile_multihead_attention {

using namespace ember;

namespace {

struct Encoder {
  nn::MultiheadAttention self_attention{nullptr}, cross_attention{nullptr};
  nn::Linear head{nullptr};
  std::unique_ptr<optim::Adam> optimizer;

  Encoder() {
    manual_seed(91);
    self_attention = nn::MultiheadAttention(8, 2, {.batch_first = true});
    cross_attention = nn::MultiheadAttention(8, 4, {.add_bias_kv = true, .add_zero_attn = true, .kdim = 6});
    head = nn::Linear(8, 3);
    std::vector<Tensor> parameters;
    for (const nn::Module* module :
         {static_cast<nn::Module*>(self_attention.get()), static_cast<nn::Module*>(cross_attention.get()),
          static_cast<nn::Module*>(head.get())})
      for (const Tensor& parameter : module->parameters()) parameters.push_back(parameter);
    optimizer = std::make_unique<optim::Adam>(parameters, optim::AdamOptions{.lr = 0.01});
  }

  // x [B, T, 8] batch first, memory [M, B, 6] sequence first, padding [B, T] bool.
  Tensor step(const Tensor& x, const Tensor& memory, const Tensor& padding) {
    optimizer->zero_grad();
    const auto [attended, weights] = self_attention->forward(x, x, x, {.key_padding_mask = padding});
    const Tensor query = attended.transpose(0, 1);                  // [T, B, 8]
    const Tensor values = cat({memory, memory.slice(2, 0, 2)}, 2);  // [M, B, 8]: vdim is embed_dim
    const Tensor crossed = std::get<0>(cross_attention->forward(query, memory, values, {.need_weights = false}));
    // Grouped-query attention over the heads of the crossed sequence: 4 query heads, 2 key heads.
    const Tensor heads = crossed.reshape({crossed.size(0), crossed.size(1), 4, 2}).permute({1, 2, 0, 3});
    const Tensor grouped = scaled_dot_product_attention(heads, heads.slice(1, 0, 2), heads.slice(1, 2, 4), {}, 0.0,
                                                        true, std::nullopt, true);
    const Tensor joined = grouped.permute({0, 2, 1, 3}).reshape({crossed.size(1), crossed.size(0), 8});
    const Tensor loss = add(mean(mul(head(joined), head(joined))), mean(mul(weights, weights)));
    loss.backward();
    optimizer->step();
    return loss.detach();
  }
};

}  // namespace

TEST_CASE("compile: a training step through MultiheadAttention and grouped-query attention equals eager") {
  Encoder eager, compiled;
  auto train_step = ember::compile(
      [&](const Tensor& x, const Tensor& memory, const Tensor& padding) { return compiled.step(x, memory, padding); },
      {.fullgraph = true});
  const Tensor padding =
      from_vector<bool>({false, false, false, true, false, false, false, false, false, false}, {2, 5});
  for (int step = 0; step < 6; ++step) {
    INFO("step ", step);
    manual_seed(900 + static_cast<uint64_t>(step));
    const Tensor x = randn({2, 5, 8});
    const Tensor memory = randn({4, 2, 6});
    const Tensor compiled_loss = train_step(x, memory, padding);
    const Tensor eager_loss = eager.step(x, memory, padding);
    CHECK(std::isfinite(eager_loss.item()));
    CHECK(graph_test::max_relative_error(compiled_loss, eager_loss) <= 1e-5);
  }
  CHECK(train_step.state().replays() == 4);
  graph_test::check_same_values(compiled.optimizer->param_groups()[0].params,
                                eager.optimizer->param_groups()[0].params);
}

TEST_CASE("compile: a training step of a Transformer with masks, captured whole, equals eager") {
  struct Translator {
    nn::Transformer model{nullptr};
    nn::Linear head{nullptr};
    std::unique_ptr<optim::Adam> optimizer;
    const Tensor padding = from_vector<bool>({false, false, false, true, false, false, false, false}, {2, 4});
    Translator() {
      manual_seed(92);
      model = nn::Transformer(8, 2,
                              {.num_encoder_layers = 2,
                               .num_decoder_layers = 1,
                               .layer = {.dim_feedforward = 16, .dropout = 0.0, .norm_first = true}});
      head = nn::Linear(8, 5);
      std::vector<Tensor> parameters = model->parameters();
      for (const Tensor& parameter : head->parameters()) parameters.push_back(parameter);
      optimizer = std::make_unique<optim::Adam>(parameters, optim::AdamOptions{.lr = 0.01});
    }
    // src [S, B, 8], tgt [T, B, 8], classes [T * B].
    Tensor step(const Tensor& src, const Tensor& tgt, const Tensor& classes) {
      optimizer->zero_grad();
      const Tensor causal = nn::TransformerImpl::generate_square_subsequent_mask(tgt.size(0));
      const Tensor out = model->forward(src, tgt,
                                        {.tgt_mask = causal,
                                         .src_key_padding_mask = padding,
                                         .memory_key_padding_mask = padding,
                                         .tgt_is_causal = true});
      const Tensor loss = cross_entropy(head(out).reshape({-1, 5}), classes);
      loss.backward();
      optimizer->step();
      return loss.detach();
    }
  };
  Translator eager, compiled;
  auto train_step = ember::compile(
      [&](const Tensor& src, const Tensor& tgt, const Tensor& classes) { return compiled.step(src, tgt, classes); },
      {.fullgraph = true});
  for (int step = 0; step < 5; ++step) {
    INFO("step ", step);
    manual_seed(950 + static_cast<uint64_t>(step));
    const Tensor src = randn({4, 2, 8}), tgt = randn({3, 2, 8});
    const Tensor classes = randint(0, 5, {6});
    const Tensor compiled_loss = train_step(src, tgt, classes);
    const Tensor eager_loss = eager.step(src, tgt, classes);
    CHECK(std::isfinite(eager_loss.item()));
    CHECK(graph_test::max_relative_error(compiled_loss, eager_loss) <= 1e-5);
  }
  CHECK(train_step.state().replays() == 3);
  graph_test::check_same_values(compiled.optimizer->param_groups()[0].params,
                                eager.optimizer->param_groups()[0].params);
}

}  // namespace test_compile_multihead_attention
