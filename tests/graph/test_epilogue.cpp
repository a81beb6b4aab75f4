// GEMM epilogue fusion: linear -> relu becomes linear(activation=relu) and stays bit-identical
// to eager (the same Relu functor on the same fp32 values), in inference graphs and in training
// steps (relu_backward reads the fused node's output); gelu fuses only where nothing else reads
// the pre-activation; the seed MLP (200 steps) and the wide MLP (20 steps) compiled equal eager.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "capture_util.h"
#include "graph/compile.h"
#include "graph/passes.h"
#include "graph_test_util.h"

namespace test_epilogue {

using namespace ember;
using namespace ember::graph;
using graph_test::capture_one;
using graph_test::replay_one;

namespace {

struct Layer {
  Tensor weight, bias;
  explicit Layer(uint64_t seed) {
    manual_seed(seed);
    weight = randn({5, 4});
    bias = randn({5});
  }
};

int64_t activation_attr(const Graph& graph) {
  for (const Node& node : graph.nodes)
    if (node.op->name == "linear") return node.attrs.get_or<int64_t>("activation", 0);
  return -1;
}

// Trains two copies of an MLP (`widths`, ReLU between layers, Adam) on the same batches, one
// eagerly and one compiled, and checks losses and parameters bit for bit.
void check_compiled_mlp(const std::vector<int64_t>& widths, int64_t batch, int steps) {
  auto make = [&](uint64_t seed) {
    manual_seed(seed);
    nn::Sequential model(std::make_shared<nn::SequentialImpl>());
    for (size_t i = 0; i + 1 < widths.size(); ++i) {
      if (i > 0) model->push_back(nn::ReLU());
      model->push_back(nn::Linear(widths[i], widths[i + 1]));
    }
    return model;
  };
  nn::Sequential eager_model = make(21), compiled_model = make(21);
  optim::Adam eager_opt(eager_model->parameters(), {.lr = 1e-3});
  optim::Adam compiled_opt(compiled_model->parameters(), {.lr = 1e-3});
  auto run = [](nn::Sequential& model, optim::Adam& opt, const Tensor& x, const Tensor& y) {
    opt.zero_grad();
    Tensor loss = cross_entropy(model->forward(x), y);
    loss.backward();
    opt.step();
    return loss;
  };
  auto train_step = ember::compile(
      [&](const Tensor& x, const Tensor& y) { return run(compiled_model, compiled_opt, x, y); }, {.fullgraph = true});
  for (int step = 0; step < steps; ++step) {
    manual_seed(500 + static_cast<uint64_t>(step));
    const Tensor x = randn({batch, widths.front()});
    const Tensor y = randint(0, widths.back(), {batch});
    INFO("step ", step);
    CHECK(graph_test::bit_equal(run(eager_model, eager_opt, x, y), train_step(x, y)));
  }
  REQUIRE(train_step.state().graph() != nullptr);
  const Graph& graph = *train_step.state().graph();
  const int hidden_layers = static_cast<int>(widths.size()) - 2;
  CHECK(graph.count_op("relu") == 0);  // every ReLU rides on its GEMM
  // Each relu_backward is a node of its own or (fusion is on) the start of a fused group with
  // its bias-gradient sum.
  int relu_backward = graph.count_op("relu_backward");
  for (const Node& node : graph.nodes) relu_backward += node.op->schema == "relu_backward+sum" ? 1 : 0;
  CHECK(relu_backward == hidden_layers);
  int fused = 0;
  for (const Node& node : graph.nodes)
    fused += node.op->name == "linear" && node.attrs.get_or<int64_t>("activation", 0) == 1 ? 1 : 0;
  CHECK(fused == hidden_layers);
  const std::vector<Tensor> expected = eager_model->parameters(), actual = compiled_model->parameters();
  for (size_t i = 0; i < expected.size(); ++i) CHECK(graph_test::bit_equal(expected[i], actual[i]));
}

}  // namespace

TEST_CASE("epilogue fusion: linear -> relu is one node, bit-identical to eager") {
  const Layer layer(1);
  auto fn = [&](const Tensor& in) { return relu(linear(in, layer.weight, layer.bias)).sum(Dims{1}); };
  manual_seed(2);
  const Tensor input = randn({3, 4});
  Graph graph = capture_one(fn, input);
  std::vector<std::string> notes;
  CHECK(fuse_gemm_epilogues(graph, &notes) == 1);
  verify(graph);
  CHECK(graph.count_op("relu") == 0);
  CHECK(activation_attr(graph) == static_cast<int64_t>(Activation::Relu));
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].find("into linear(activation=relu)") != std::string::npos);
  CHECK(to_text(graph).find("linear(%x0, %s0, %s1, activation=1)") != std::string::npos);
  const Tensor expected = fn(input);
  CHECK(graph_test::bit_equal(replay_one(graph, input), expected));
  // Some outputs were clipped: the test is not of an identity.
  const std::vector<float> pre = linear(input, layer.weight, layer.bias).to_vector<float>();
  CHECK(*std::min_element(pre.begin(), pre.end()) < 0.0f);
  CHECK(*std::max_element(pre.begin(), pre.end()) > 0.0f);
}

TEST_CASE("epilogue fusion: an integer linear -> relu stays two nodes and equals eager") {
  // The integer product (CPU only) has no epilogue: fusing would make linear refuse the graph.
  manual_seed(3);
  const Tensor weight = randint(-5, 5, {5, 4}), bias = randint(-5, 5, {5});
  auto fn = [&](const Tensor& in) { return relu(linear(in, weight, bias)); };
  const Tensor input = randint(-5, 5, {3, 4});
  Graph graph = capture_one(fn, input);
  std::vector<std::string> notes;
  CHECK(fuse_gemm_epilogues(graph, &notes) == 0);
  verify(graph);
  REQUIRE(notes.size() == 1);
  INFO(notes[0]);
  CHECK(notes[0].find("the int64 GEMM has no epilogue") != std::string::npos);
  const Tensor expected = fn(input);
  CHECK(expected.dtype() == kInt64);
  CHECK(replay_one(graph, input).to_vector<int64_t>() == expected.to_vector<int64_t>());
  const std::vector<int64_t> pre = linear(input, weight, bias).to_vector<int64_t>();
  CHECK(*std::min_element(pre.begin(), pre.end()) < 0);  // relu clipped something
}

TEST_CASE("epilogue fusion: gelu fuses without a backward, with one, or a second reader, it does not") {
  const Layer layer(3);
  manual_seed(4);
  const Tensor input = randn({3, 4});
  for (bool tanh_form : {false, true}) {
    INFO("tanh ", tanh_form);
    auto fn = [&](const Tensor& in) { return gelu(linear(in, layer.weight, layer.bias), tanh_form).neg(); };
    Graph graph = capture_one(fn, input);
    CHECK(fuse_gemm_epilogues(graph) == 1);
    verify(graph);
    CHECK(activation_attr(graph) == static_cast<int64_t>(tanh_form ? Activation::GeluTanh : Activation::Gelu));
    const Tensor fused = replay_one(graph, input);
    // The eager op with the attribute runs the same kernel: bit for bit. Against the two-op
    // eager path the GELU formula may contract differently (FMA), so within float rounding.
    CHECK(graph_test::bit_equal(fused, linear(input, layer.weight, layer.bias,
                                              tanh_form ? Activation::GeluTanh : Activation::Gelu).neg()));
    const std::vector<float> got = fused.to_vector<float>(), want = fn(input).to_vector<float>();
    for (size_t i = 0; i < got.size(); ++i) CHECK(std::abs(got[i] - want[i]) <= 1e-6f * (1.0f + std::abs(want[i])));
  }
  // Training: gelu_backward reads the pre-activation, which a fused node would not produce.
  Tensor weight = layer.weight.clone().requires_grad_();
  Graph training = capture_one([&](const Tensor& in) {
    Tensor loss = gelu(linear(in, weight, layer.bias)).sum();
    loss.backward();
    return weight.grad().clone();
  }, input);
  CHECK(fuse_gemm_epilogues(training) == 0);
  CHECK(training.count_op("gelu") == 1);
  // A second reader of linear's output keeps relu separate too.
  Graph shared = capture_one([&](const Tensor& in) {
    const Tensor pre = linear(in, layer.weight, layer.bias);
    return relu(pre) + pre;
  }, input);
  CHECK(fuse_gemm_epilogues(shared) == 0);
  CHECK(shared.count_op("relu") == 1);
}

TEST_CASE("epilogue fusion: the seed MLP compiled equals eager for 200 steps") {
  check_compiled_mlp({100, 256, 10}, 32, 200);
}

TEST_CASE("epilogue fusion: the wide MLP compiled equals eager for 20 steps") {
  // The benchmark's wide model (784-1024-1024-1024-10); batch 64 instead of 256 keeps the test
  // short on shared cores and still tiles the GEMMs (m * n * k >= 2^23).
  check_compiled_mlp({784, 1024, 1024, 1024, 10}, 64, 20);
}

TEST_CASE("linear: an unknown activation code is an error naming the op and the code") {
  const Layer layer(5);
  static const OpDef& op = lookup_op("linear");
  CHECK_THROWS_WITH_AS(dispatch_one(op, {randn({2, 4}), layer.weight, layer.bias}, {{"activation", int64_t{7}}}),
                       doctest::Contains("linear: activation must be 0 (none), 1 (relu), 2 (gelu) or 3 (gelu_tanh), got 7"),
                       Error);
}

TEST_CASE("compile: EMBER_LOGS=passes prints each pass and the fused activation") {
  const Layer layer(6);
  auto fn = ember::compile([&](const Tensor& in) { return relu(linear(in, layer.weight, layer.bias)).neg(); },
                           {.warmup_calls = 0});
  const Tensor input = randn({2, 4});
  setenv("EMBER_LOGS", "passes", 1);
  // doctest does not capture stderr: redirect it to a file for the duration of the capture.
  std::FILE* log = std::tmpfile();
  REQUIRE(log != nullptr);
  std::fflush(stderr);
  const int saved = dup(fileno(stderr));
  dup2(fileno(log), fileno(stderr));
  const Tensor result = fn(input);
  std::fflush(stderr);
  dup2(saved, fileno(stderr));
  close(saved);
  unsetenv("EMBER_LOGS");
  std::rewind(log);
  std::string text;
  for (int c = std::fgetc(log); c != EOF; c = std::fgetc(log)) text.push_back(static_cast<char>(c));
  std::fclose(log);
  CHECK(graph_test::bit_equal(result, relu(linear(input, layer.weight, layer.bias)).neg()));
  CHECK(text.find("[ember compile] pass constant_folding: 0 nodes folded") != std::string::npos);
  CHECK(text.find("[ember compile] pass epilogue_fusion: 1 activations fused into GEMMs") != std::string::npos);
  CHECK(text.find("fused: linear %") != std::string::npos);
  CHECK(text.find("into linear(activation=relu)") != std::string::npos);
}

}  // namespace test_epilogue
