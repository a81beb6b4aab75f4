// Every user error names the op, the offending values and the caller's file:line, and leaves the
// inputs untouched. Each case below is one kind of bad input from the list.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "error_of.h"
#include "runtime/ember.h"
#include "runtime/dispatch.h"
#include "runtime/ops/registry.h"

namespace test_errors {

using namespace ember;
using ember::testing::error_of;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("linear names both shapes and the caller's line") {
  Tensor input = randn({32, 100});
  Tensor weight = randn({256, 128});
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { (void)linear(input, weight); });
  CHECK(contains(message, "linear"));
  CHECK(contains(message, "[32, 100]"));
  CHECK(contains(message, "[256, 128]"));
  CHECK(contains(message, "test_errors.cpp:" + std::to_string(line)));
}

TEST_CASE("broadcast mismatches name the op and both shapes") {
  const std::string message = error_of([] { (void)add(randn({2, 3}), randn({4})); });
  CHECK(contains(message, "add"));
  CHECK(contains(message, "[2, 3]"));
  CHECK(contains(message, "[4]"));
}

TEST_CASE("errors raised through C++ operators name the line that wrote the expression") {
  const Tensor a = randn({2, 3});
  const Tensor b = randn({4});
  const Tensor mask = from_vector(std::vector<bool>{true, false}, {2});
  Tensor target = randn({2, 3});
  struct Case {
    const char* what;
    int line;
    std::string message;
  };
  // Each message is taken on the line it names.
  const Case cases[] = {
      {"a + b", __LINE__, error_of([&] { (void)(a + b); })},
      {"a - b", __LINE__, error_of([&] { (void)(a - b); })},
      {"a * b", __LINE__, error_of([&] { (void)(a * b); })},
      {"a < b", __LINE__, error_of([&] { (void)(a < b); })},
      {"target += b", __LINE__, error_of([&] { target += b; })},
      {"-mask", __LINE__, error_of([&] { (void)(-mask); })},
      {"1.0 - mask", __LINE__, error_of([&] { (void)(1.0 - mask); })},
      {"mask - 1", __LINE__, error_of([&] { (void)(mask - 1); })},
  };
  for (const Case& c : cases) {
    INFO(c.what, ": ", c.message);
    CHECK(contains(c.message, "test_errors.cpp:" + std::to_string(c.line)));
    CHECK_FALSE(contains(c.message, "tensor_methods.cpp"));
  }
  // The operators still compute what the functions do, scalars on either side.
  const Tensor x = from_vector(std::vector<float>{1.f, -2.f}, {2});
  CHECK((2 * x - x / 2.0 + 1).to_vector<float>() == std::vector<float>{2.5f, -2.f});
  CHECK((3.0 / x).to_vector<float>() == std::vector<float>{3.f, -1.5f});
  CHECK((-x).to_vector<float>() == std::vector<float>{-1.f, 2.f});
  CHECK((x == x).to_vector<bool>() == std::vector<bool>{true, true});
}

TEST_CASE("dtype errors name the dtype") {
  Tensor logits = randn({4, 3});
  Tensor float_target = randn({4});
  const std::string message = error_of([&] { (void)cross_entropy(logits, float_target); });
  CHECK(contains(message, "cross_entropy"));
  CHECK(contains(message, "float32"));
  CHECK(contains(error_of([] { (void)randint(0, 5, {3}).requires_grad_(); }), "floating-point"));
}

TEST_CASE("out-of-range class indices name the index and the class count") {
  Tensor logits = randn({3, 10});
  Tensor target = from_vector<int64_t>({1, 12, 3});
  const std::string message = error_of([&] { (void)cross_entropy(logits, target); });
  CHECK(contains(message, "cross_entropy"));
  CHECK(contains(message, "12"));
  CHECK(contains(message, "10"));
  CHECK(contains(error_of([&] { (void)embedding(randn({5, 2}), from_vector<int64_t>({7})); }), "7"));
}

TEST_CASE("negative and out-of-range dims and sizes") {
  CHECK(contains(error_of([] { (void)sum(randn({2, 3}), {5}); }), "dim 5"));
  CHECK(contains(error_of([] { (void)zeros({2, -3}); }), "negative size"));
  CHECK(contains(error_of([] { (void)randn({6}).view({4, -1}); }), "view"));
  CHECK(contains(error_of([] { (void)randn({2, 3}).transpose(0, 3); }), "transpose"));
}

TEST_CASE("empty tensors: reductions without identity and item() refuse clearly") {
  CHECK(contains(error_of([] { (void)amax(zeros({0})); }), "amax"));
  CHECK(contains(error_of([] { (void)zeros({0}).item(); }), "item"));
  CHECK(contains(error_of([] { (void)Tensor().sizes(); }), "undefined"));
}

TEST_CASE("bad files name the path") {
  const std::string message = error_of([] { (void)data::read_npy("/nonexistent/dir/x.npy"); });
  CHECK(contains(message, "/nonexistent/dir/x.npy"));
}

TEST_CASE("autograd: backward through a freed graph") {
  Tensor x = randn({3}).requires_grad_();
  Tensor y = sum(mul(x, x));
  y.backward();
  const std::string message = error_of([&] { y.backward(); });
  CHECK(contains(message, "second time"));
  CHECK(contains(message, "retain_graph"));
}

TEST_CASE("autograd: a second backward through nodes that saved nothing runs and accumulates, as in PyTorch") {
  Tensor x = from_vector<float>({1, 2, 3}).requires_grad_();
  Tensor y = sum(add(x, 2.0));  // neither add_scalar nor sum saves a tensor
  y.backward();
  y.backward();
  CHECK(x.grad().to_vector<float>() == std::vector<float>{2, 2, 2});
}

TEST_CASE("autograd: retain_graph allows a second backward that accumulates") {
  Tensor x = from_vector<float>({1, 2, 3}).requires_grad_();
  Tensor y = sum(mul(x, x));
  y.backward({}, true);
  y.backward();
  CHECK(x.grad().to_vector<float>() == std::vector<float>{4, 8, 12});
}

TEST_CASE("autograd: a saved tensor modified in place") {
  Tensor x = randn({3}).requires_grad_();
  Tensor h = mul(x, 2.0);
  Tensor y = mul(h, h);  // saves h
  {
    NoGradGuard no_grad;
    h.add_(ones({3}));  // bumps h's version
  }
  const std::string message = error_of([&] { sum(y).backward(); });
  CHECK(contains(message, "modified by an in-place operation"));
  CHECK(contains(message, "mul"));
}

TEST_CASE("autograd: backward on a non-scalar needs a gradient") {
  Tensor x = randn({2, 2}).requires_grad_();
  Tensor y = mul(x, 3.0);
  const std::string message = error_of([&] { y.backward(); });
  CHECK(contains(message, "scalar"));
  CHECK(contains(message, "[2, 2]"));
  y.backward(ones({2, 2}));
  CHECK(x.grad().to_vector<float>() == std::vector<float>(4, 3.0f));
}

TEST_CASE("autograd: backward of a tensor that does not require grad") {
  CHECK(contains(error_of([] { sum(randn({3})).backward(); }), "does not require grad"));
}

TEST_CASE("in-place on a leaf that requires grad is refused and leaves it unchanged") {
  Tensor w = from_vector<float>({1, 2}).requires_grad_();
  const std::string message = error_of([&] { w.add_(ones({2})); });
  CHECK(contains(message, "add_"));
  CHECK(contains(message, "leaf"));
  CHECK(w.to_vector<float>() == std::vector<float>{1, 2});
}

TEST_CASE("extremum_backward refuses integer tensors instead of reading them at a float's width") {
  const Tensor input = from_vector<int32_t>({1, 5, 2}, {3}, {.dtype = kInt32});
  const Tensor reduced = from_vector<int32_t>({5}, {}, {.dtype = kInt32});
  const std::string message = error_of([&] {
    (void)dispatch_one(registry().get("extremum_backward"), {reduced, input, reduced},
                       Attrs{{"dims", Dims{0}}, {"keepdim", false}});
  });
  CHECK(contains(message, "extremum_backward: expected a floating-point dtype, got int32"));
}

TEST_CASE("internal assertions say they are bugs") {
  const std::string message = error_of([] { internal_assert(false, "an invariant"); });
  CHECK(contains(message, "a bug in ember"));
}

TEST_CASE("a failing op leaves its inputs untouched") {
  Tensor a = from_vector<float>({1, 2, 3});
  Tensor b = from_vector<float>({1, 2});
  (void)error_of([&] { a.add_(b); });
  CHECK(a.to_vector<float>() == std::vector<float>{1, 2, 3});
  CHECK(a.version() == 0);
}

// An op registered with only a CPU kernel (every registry op gets a CUDA kernel, so none can
// stand in for "an op without one").
const OpDef& cpu_only_op() {
  static const OpDef& op = [] () -> const OpDef& {
    OpDef def;
    def.name = "test_cpu_only_identity";
    def.schema = "test_cpu_only_identity(Tensor a) -> Tensor";
    def.kind = OpKind::Other;
    def.infer = [](const OpCall& call, OutputMetas& outputs) {
      outputs[0].sizes = call.input(0).sizes();
      outputs[0].dtype = call.input(0).dtype();
    };
    def.kernels[static_cast<int>(DeviceType::CPU)] = [](const OpCall&, TensorList&) {};
    registry().add(std::move(def));
    return registry().get("test_cpu_only_identity");
  }();
  return op;
}

TEST_CASE("device mismatches name both devices") {
  // A tensor that merely claims to live on cuda:0 (made by hand: from_blob refuses host memory
  // as a CUDA tensor): the dispatcher must refuse before any kernel could touch its memory.
  std::vector<float> host(3, 1.0f);
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = Storage::wrap(host.data(), 3 * sizeof(float), Device(DeviceType::CUDA, 0), nullptr);
  impl->sizes = {3};
  impl->strides = {1};
  impl->dtype = kFloat32;
  impl->device = Device(DeviceType::CUDA, 0);
  Tensor claimed(std::move(impl));
  const std::string message = error_of([&] { (void)add(randn({3}), claimed); });
  CHECK(contains(message, "add"));
  CHECK(contains(message, "cpu"));
  CHECK(contains(message, "cuda:0"));
  CHECK(contains(error_of([&] { (void)dispatch_one(cpu_only_op(), {claimed}, Attrs{}); }), "no kernel for device cuda:0"));
}

TEST_CASE("from_blob refuses host memory as a CUDA tensor, with or without a GPU") {
  // On a GPU, kernels given the host address would fault and end the process's CUDA context.
  std::vector<float> host(3, 1.0f);
  const std::string message =
      error_of([&] { (void)from_blob(host.data(), {3}, kFloat32, Device(DeviceType::CUDA, 0)); });
  CHECK(contains(message, "from_blob"));
  CHECK(contains(message, "cuda:0"));
  CHECK(contains(message, "test_errors.cpp"));
  if (cuda_is_available()) CHECK(contains(message, "host memory"));
  else CHECK(contains(message, "unavailable"));
  CHECK_NOTHROW((void)from_blob(host.data(), {3}, kFloat32, kCPU));
}

}  // namespace test_errors
