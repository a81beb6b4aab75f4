// utils::checkpoint against PyTorch 2.3's non-reentrant checkpoint where a review found it differed
// or was untested: in-place changes to saved tensors, a backward inside the function, freeing of
// released slots, restored generator, autocast and nesting, errors, segments, threads.
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <latch>
#include <string>
#include <thread>
#include <vector>

#include "error_of.h"
#include "runtime/ember.h"

namespace test_checkpoint_review {

using namespace ember;
using ember::testing::error_of;

TEST_CASE("checkpoint: a saved tensor the function changes in place afterwards is the version error, as without it") {
  const Tensor x = full({3}, 0.5, {.dtype = kFloat64}).requires_grad_();
  // exp saves its output for backward; the in-place doubling changes it, so exp's backward would
  // read 2 exp(x) where it needs exp(x).
  const auto doubled_exp = [](const Tensor& in) {
    Tensor h = exp(in);
    h.mul_(2.0);
    return h;
  };
  const std::string plain = error_of([&] { doubled_exp(x).sum().backward(); });
  CHECK(plain.find("output 0 of exp (shape [3]) is at version 1, but version 0 was saved") != std::string::npos);
  const std::string checkpointed = error_of([&] { utils::checkpoint(doubled_exp, x).sum().backward(); });
  INFO(checkpointed);
  CHECK(checkpointed.find("output 0 of exp (shape [3]) is at version 1, but version 0 was saved") != std::string::npos);
  CHECK_FALSE(x.grad().defined());  // nothing was accumulated from the changed values
}

TEST_CASE("checkpoint: an input changed in place between two backward passes of a retained graph is an error") {
  const Tensor leaf = full({3}, 0.5, {.dtype = kFloat64}).requires_grad_();
  const auto square = [](const Tensor& in) { return mul(in, in); };  // mul saves both operands: the input
  for (const bool checkpointed : {false, true}) {
    INFO(std::string(checkpointed ? "checkpointed" : "plain"));
    Tensor x = mul(leaf, 1.0);
    const Tensor y = (checkpointed ? utils::checkpoint(square, x) : square(x)).sum();
    y.backward({}, /*retain_graph=*/true);
    CHECK(leaf.grad().to_vector<double>() == std::vector<double>{1.0, 1.0, 1.0});  // 2 x
    Tensor(leaf).set_grad(Tensor());
    {
      const NoGradGuard no_grad;
      x.mul_(3.0);
    }
    // The recomputed operands alias x, so the second pass would read 3 x and give 3, not 1.
    const std::string message = error_of([&] { y.backward(); });
    INFO(message);
    CHECK(message.find("input 0 of mul (shape [3]) is at version 1, but version 0 was saved") != std::string::npos);
    CHECK_FALSE(leaf.grad().defined());
  }
}

TEST_CASE("checkpoint: a function that takes a gradient of its own tensors (autograd::grad inside) works") {
  // A gradient penalty inside the checkpointed block: g = d sum(x^3) / dx = 3 x^2, returned as g^2
  // = 9 x^4, whose derivative is 36 x^3. PyTorch 2.3's non-reentrant checkpoint supports this: the
  // inner backward reads the forward's saved tensors while they still exist, and the
  // recomputation's own.
  manual_seed(21);
  const Tensor x = randn({5}, {.dtype = kFloat64}).requires_grad_();
  int calls = 0;
  const auto squared_gradient = [&](const Tensor& in) {
    ++calls;
    const Tensor cube = mul(mul(in, in), in).sum();
    const Tensor g = autograd::grad({cube}, {in}, {}, /*retain_graph=*/true, /*create_graph=*/true)[0];
    return mul(g, g);
  };
  const std::vector<double> plain = autograd::grad({squared_gradient(x).sum()}, {x})[0].to_vector<double>();
  calls = 0;
  const Tensor out = utils::checkpoint(squared_gradient, x);
  CHECK(calls == 1);
  const std::vector<double> checkpointed = autograd::grad({out.sum()}, {x})[0].to_vector<double>();
  CHECK(calls == 2);
  CHECK(checkpointed == plain);
  const std::vector<double> values = x.to_vector<double>();
  for (size_t i = 0; i < values.size(); ++i)
    CHECK(checkpointed[i] == doctest::Approx(36 * values[i] * values[i] * values[i]).epsilon(1e-12));
}

TEST_CASE("checkpoint: a backward frees the recomputed tensors of the nodes it ran, while other outputs live on") {
  // Two outputs: a chain of 8 tanh (each saves its output) and exp(x) (saves one). A backward
  // through the chain alone leaves exp's node, and with it the frame, alive for a later backward
  // through the second output; the chain's recomputed tensors, consumed and released, must not
  // stay with the frame (PyTorch 2.3 frees each recomputed tensor once its node unpacked it).
  manual_seed(22);
  const Tensor x = randn({256, 256}).requires_grad_();
  const auto chain_and_exp = [](const std::vector<Tensor>& in) {
    Tensor h = in[0];
    for (int i = 0; i < 8; ++i) h = tanh(h);
    return std::vector<Tensor>{h, exp(in[0])};
  };
  const std::vector<Tensor> outputs = utils::checkpoint(chain_and_exp, {x});
  const int64_t activation = 256 * 256 * 4;
  const int64_t before = memory_stats(kCPU).allocated_bytes;
  outputs[0].sum().backward();
  const int64_t held = memory_stats(kCPU).allocated_bytes - before;
  CHECK(held <= 3 * activation);  // x.grad and exp's recomputed output, not the 8 tanh outputs
  // The second output's backward reads what it kept: the plain gradients, summed.
  outputs[1].sum().backward();
  const Tensor expected = [&] {
    const Tensor leaf = x.detach().requires_grad_();
    const std::vector<Tensor> plain = chain_and_exp({leaf});
    add(plain[0].sum(), plain[1].sum()).backward();
    return leaf.grad();
  }();
  CHECK(x.grad().to_vector<float>() == expected.to_vector<float>());
}

// The tests below pin behaviour no other test did: removing the line that gives it made no test fail.

TEST_CASE("checkpoint: the generator after backward is where the plain run leaves it, with draws in between") {
  // The recomputation starts from the forward's state and must give back the state it found, not
  // the one its own draws end at (those equal the forward's end only if nothing drew since).
  const Tensor x = full({6}, 0.75, {.dtype = kFloat64}).requires_grad_();
  const auto dropped = [](const Tensor& in) { return mul(nn::functional::dropout(tanh(in), 0.5, true), in); };
  const auto run = [&](bool checkpointed) {
    Tensor(x).set_grad(Tensor());
    manual_seed(31);
    const Tensor out = checkpointed ? utils::checkpoint(dropped, x) : dropped(x);
    const double between = rand({1}, {.dtype = kFloat64}).item();
    out.sum().backward();
    const double after = rand({1}, {.dtype = kFloat64}).item();
    return std::vector<std::vector<double>>{x.grad().to_vector<double>(), {between, after}};
  };
  CHECK(run(true) == run(false));
}

TEST_CASE("checkpoint: the recomputation runs under the forward's autocast, giving the plain gradients") {
  manual_seed(32);
  nn::Linear linear(4, 3);
  const Tensor x = randn({2, 4}).requires_grad_();
  const auto block = [&](const Tensor& in) { return tanh(linear->forward(in)); };
  const auto gradients = [&](bool checkpointed) {
    Tensor(x).set_grad(Tensor());
    linear->zero_grad();
    Tensor out;
    {
      const AutocastGuard autocast(kBFloat16);
      out = checkpointed ? utils::checkpoint(block, x) : block(x);
    }
    CHECK(out.dtype() == kBFloat16);
    out.to(kFloat32).sum().backward();  // backward outside the guard, as training loops do
    return std::vector<std::vector<float>>{x.grad().to_vector<float>(), linear->weight.grad().to_vector<float>()};
  };
  CHECK(gradients(true) == gradients(false));
}

TEST_CASE("checkpoint: a nested checkpoint gives the enclosing one back its placeholders when it returns") {
  manual_seed(33);
  const Tensor x = randn({256, 256}).requires_grad_();
  const auto outer = [](const Tensor& in) {
    Tensor h = utils::checkpoint([](const Tensor& inner_in) { return tanh(inner_in); }, in);
    for (int i = 0; i < 8; ++i) h = tanh(h);  // the outer function's own saves, after the inner one
    return h;
  };
  const int64_t before = memory_stats(kCPU).allocated_bytes;
  const Tensor out = utils::checkpoint(outer, x);
  CHECK(memory_stats(kCPU).allocated_bytes - before <= 256 * 256 * 4);  // only the result
  out.sum().backward();
  const std::vector<float> checkpointed = x.grad().to_vector<float>();
  Tensor(x).set_grad(Tensor());
  outer(x).sum().backward();
  CHECK(checkpointed == x.grad().to_vector<float>());
}

TEST_CASE("checkpoint: a recomputation that runs a backward through the forward's own tensors is an error") {
  const Tensor x = full({3}, 0.5, {.dtype = kFloat64}).requires_grad_();
  Tensor first_run;
  int calls = 0;
  const auto reentrant = [&](const Tensor& in) {
    Tensor h = exp(in);
    if (++calls == 1)
      first_run = h;
    else
      autograd::grad({first_run.sum()}, {x}, {}, /*retain_graph=*/true);  // needs this very frame
    return h;
  };
  const Tensor y = utils::checkpoint(reentrant, x).sum();
  const std::string message = error_of([&] { y.backward(); });
  CHECK(message.find("while that function was being recomputed") != std::string::npos);
}

TEST_CASE("checkpoint_sequential: holds the segments' borders and the last segment's activations, as PyTorch's") {
  // 8 Tanh modules (each saves its output) in 3 segments: PyTorch 2.3 cuts 8 / 3 = 2 modules per
  // checkpointed segment, [0, 2) and [2, 4), and runs [4, 8) plainly. Held after the forward: the
  // first checkpoint's output (the second one's input) and the last segment's 4 outputs. A wrong
  // cut or a missing checkpoint holds another count (3 for 3 modules per segment, 8 for none).
  nn::Sequential model;
  for (int i = 0; i < 8; ++i) model->push_back(nn::Tanh());
  manual_seed(34);
  const Tensor x = randn({256, 256}).requires_grad_();
  const int64_t activation = 256 * 256 * 4;
  const int64_t before = memory_stats(kCPU).allocated_bytes;
  const Tensor out = utils::checkpoint_sequential(model, 3, x);
  const int64_t held = memory_stats(kCPU).allocated_bytes - before;
  CHECK(held >= 5 * activation);
  CHECK(held < 6 * activation);
  out.sum().backward();
  const std::vector<float> checkpointed = x.grad().to_vector<float>();
  Tensor(x).set_grad(Tensor());
  model->forward(x).sum().backward();
  CHECK(checkpointed == x.grad().to_vector<float>());
}

TEST_CASE("checkpoint_sequential: an error at a segment's recomputation names the segment, not checkpoint") {
  const nn::Sequential model{nn::Tanh(), nn::Tanh(), nn::Tanh(), nn::Tanh()};
  const Tensor leaf = full({3}, 0.5, {.dtype = kFloat64}).requires_grad_();
  Tensor x = mul(leaf, 1.0);
  const Tensor y = utils::checkpoint_sequential(model, 2, x);
  x.mul_(2.0);
  const std::string message = error_of([&] { y.sum().backward(); });
  INFO(message);
  CHECK(message.find("checkpoint_sequential: segment 0 (modules 0 to 1): input 0 (shape [3]) was modified") !=
        std::string::npos);
}

TEST_CASE("checkpoint: a recomputation that throws leaves the frame usable and the generator where it was") {
  const Tensor x = full({4}, 0.3, {.dtype = kFloat64}).requires_grad_();
  int calls = 0;
  const auto flaky = [&](const Tensor& in) {
    if (++calls == 2) throw std::runtime_error("flaky: the first recomputation fails");
    return mul(nn::functional::dropout(tanh(in), 0.5, true), in);
  };
  manual_seed(35);
  const Tensor y = utils::checkpoint(flaky, x).sum();
  const GeneratorState before = default_generator(kCPU).get_state();
  CHECK_THROWS_WITH(y.backward({}, /*retain_graph=*/true), "flaky: the first recomputation fails");
  CHECK(default_generator(kCPU).get_state() == before);
  y.backward();  // recomputed again, from the forward's random state
  CHECK(calls == 3);
  const std::vector<double> checkpointed = x.grad().to_vector<double>();
  Tensor(x).set_grad(Tensor());
  manual_seed(35);
  flaky(x).sum().backward();
  CHECK(checkpointed == x.grad().to_vector<double>());
}

TEST_CASE("checkpoint: backward passes in several threads through one retained graph recompute it once") {
  manual_seed(36);
  const Tensor x = randn({4096}, {.dtype = kFloat64}).requires_grad_();
  std::atomic<int> calls{0};
  const auto chain = [&](const Tensor& in) {
    ++calls;
    Tensor h = in;
    for (int i = 0; i < 20; ++i) h = tanh(h);
    return h;
  };
  const Tensor y = utils::checkpoint(chain, x).sum();
  std::vector<Tensor> gradients(4);
  std::latch start(static_cast<std::ptrdiff_t>(gradients.size()));  // all reach the frame together
  std::vector<std::thread> threads;
  for (size_t t = 0; t < gradients.size(); ++t)
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      gradients[t] = autograd::grad({y}, {x}, {}, /*retain_graph=*/true)[0];
    });
  for (std::thread& thread : threads) thread.join();
  CHECK(calls == 2);  // the forward and one recomputation, whichever thread got there first
  const std::vector<double> expected = autograd::grad({chain(x).sum()}, {x})[0].to_vector<double>();
  for (const Tensor& gradient : gradients) CHECK(gradient.to_vector<double>() == expected);
}

TEST_CASE("checkpoint: an input the function itself changes in place is refused, naming the function, not the caller") {
  // Allowed without checkpoint (x is not a leaf); refused with it, as PyTorch 2.3 refuses it (its
  // saved inputs' versions changed): the recomputation would start from the changed input.
  const Tensor leaf = full({3}, 0.5, {.dtype = kFloat64}).requires_grad_();
  const auto doubling_in_place = [](const Tensor& in) {
    Tensor changed = in;
    changed.mul_(2.0);
    return mul(changed, changed);
  };
  const std::string message = error_of([&] { utils::checkpoint(doubling_in_place, mul(leaf, 1.0)).sum().backward(); });
  INFO(message);
  CHECK(message.find("checkpoint: input 0 (shape [3]) was modified in place by the checkpointed function itself") !=
        std::string::npos);
}

TEST_CASE("checkpoint_sequential: passes its options to each segment's checkpoint") {
  // preserve_rng_state = false, as for checkpoint: the recomputed dropout draws another mask, so the
  // gradient is not the plain one (it is with the default).
  const nn::Sequential model{nn::Tanh(), nn::Dropout(0.5), nn::Tanh(), nn::Tanh()};
  const Tensor x = full({16}, 0.5, {.dtype = kFloat64}).requires_grad_();
  const auto gradient = [&](int mode) {
    Tensor(x).set_grad(Tensor());
    manual_seed(37);
    const Tensor y = mode == 0   ? model->forward(x)
                     : mode == 1 ? utils::checkpoint_sequential(model, 2, x)
                                 : utils::checkpoint_sequential(model, 2, x, {.preserve_rng_state = false});
    y.sum().backward();
    return x.grad().to_vector<double>();
  };
  const std::vector<double> plain = gradient(0);
  CHECK(gradient(1) == plain);
  CHECK(gradient(2) != plain);
}

}  // namespace test_checkpoint_review
