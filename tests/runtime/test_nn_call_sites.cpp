// Errors raised by nn::init functions, Module's tree operations and model(x) name the function the
// user called and the user's line that called it, never a line inside ember.
#include <doctest/doctest.h>

#include <string>

#include "error_of.h"
#include "runtime/ember.h"

namespace test_nn_call_sites {

using namespace ember;
using ember::testing::error_of;
using ember::testing::names_line;

namespace {


// The lines of RegistryImpl's three registrations.
const int kParameterLine = __LINE__ + 3;
struct RegistryImpl : nn::Module {
  RegistryImpl() : Module("Registry") {}
  void add_parameter(const std::string& name) { register_parameter(name, ones({1})); }
  void add_buffer(const std::string& name) { register_buffer(name, ones({1})); }
  void add_module(const std::string& name) { register_module(name, nn::ReLU()); }
};

// A user module whose forward takes the caller's location, as the built-in ones do.
struct CheckedImpl : nn::Module {
  CheckedImpl() : Module("Checked") {}
  Tensor forward(const Tensor& x, Where where = Where::current()) {
    CallSiteScope site(where);
    check(x.dim() == 2, "Checked: expected a 2-d input, got shape {}", x.sizes());
    return x;
  }
};
struct Checked : nn::ModuleHolder<CheckedImpl> {
  Checked() : ModuleHolder(std::make_shared<CheckedImpl>()) {}
};

}  // namespace

TEST_CASE("nn::init errors name the function called and the caller's line") {
  const Tensor expanded = zeros({1, 3}).expand({4, 3});
  const Tensor integers = empty({3, 3}, {.dtype = kInt64});
  struct Case {
    std::string message, expected;
    int line;
  };
  std::vector<Case> cases;
  int line = __LINE__ + 1;
  cases.push_back({error_of([&] { nn::init::normal_(expanded); }),
                   "nn::init::normal_: the tensor (shape [4, 3], strides [0, 1]) is expanded", line});
  line = __LINE__ + 1;
  cases.push_back({error_of([] { nn::init::constant_(Tensor(), 1.0); }), "nn::init::constant_: undefined tensor",
                   line});
  line = __LINE__ + 1;
  cases.push_back({error_of([] { nn::init::zeros_(Tensor()); }), "nn::init::zeros_: undefined tensor", line});
  line = __LINE__ + 1;
  cases.push_back({error_of([] { nn::init::uniform_(empty({3}), 2, 1); }),
                   "nn::init::uniform_: low (2) must not exceed high (1)", line});
  line = __LINE__ + 1;
  cases.push_back({error_of([&] { nn::init::kaiming_uniform_(integers); }),
                   "nn::init::kaiming_uniform_: expected a floating-point tensor, got int64", line});
  line = __LINE__ + 1;
  cases.push_back({error_of([&] { nn::init::kaiming_normal_(integers); }),
                   "nn::init::kaiming_normal_: expected a floating-point tensor", line});
  line = __LINE__ + 1;
  cases.push_back({error_of([&] { nn::init::xavier_uniform_(integers); }),
                   "nn::init::xavier_uniform_: expected a floating-point tensor", line});
  line = __LINE__ + 1;
  cases.push_back({error_of([] { nn::init::xavier_normal_(ones({5})); }),
                   "nn::init::xavier_normal_: fan in and fan out need a tensor with at least 2 dims, got shape [5]",
                   line});
  line = __LINE__ + 1;
  cases.push_back({error_of([] { nn::init::calculate_fan_in_and_fan_out(ones({5})); }),
                   "nn::init::calculate_fan_in_and_fan_out: fan in", line});
  for (const Case& c : cases) {
    INFO(c.message);
    CHECK(c.message.find(c.expected) != std::string::npos);
    CHECK(names_line(c.message, c.line));
  }
}

TEST_CASE("Module's to, load_state_dict and registration errors name the caller's line") {
  nn::Linear linear(2, 2);
  int line = __LINE__ + 1;
  std::string message = error_of([&] { linear->to(kInt64); });
  CHECK(message.find("Linear: to(dtype) converts floating-point tensors; got target dtype int64") != std::string::npos);
  CHECK(names_line(message, line));

  nn::StateDict missing;
  missing.insert("weight", ones({2, 2}));
  line = __LINE__ + 1;
  message = error_of([&] { linear->load_state_dict(missing); });
  CHECK(message.find("Error(s) in loading state_dict for Linear:\n\tMissing key(s) in state_dict: \"bias\". ") != std::string::npos);
  CHECK(names_line(message, line));

  // A failure inside the copy (a device that is not there) names the caller's line too.
  line = __LINE__ + 1;
  message = error_of([&] { linear->to(Device(DeviceType::CUDA, 99)); });
  CHECK(names_line(message, line));

  RegistryImpl registry;
  registry.add_parameter("w");
  registry.add_buffer("b");
  registry.add_module("m");
  // The error names the line inside the user's module that registered.
  message = error_of([&] { registry.add_parameter("w"); });
  CHECK(message.find("Registry: cannot register parameter 'w': the name is already taken") != std::string::npos);
  CHECK(names_line(message, kParameterLine));
  message = error_of([&] { registry.add_buffer("w"); });
  CHECK(message.find("Registry: cannot register buffer 'w'") != std::string::npos);
  CHECK(names_line(message, kParameterLine + 1));
  message = error_of([&] { registry.add_module("b"); });
  CHECK(message.find("Registry: cannot register submodule 'b'") != std::string::npos);
  CHECK(names_line(message, kParameterLine + 2));
}

TEST_CASE("model(x) errors name the caller's line, for built-in modules and a forward that takes it") {
  nn::Linear linear(3, 2);
  int line = __LINE__ + 1;
  std::string message = error_of([&] { linear(ones({4, 5})); });
  CHECK(message.find("linear") != std::string::npos);
  CHECK(names_line(message, line));
  Checked checked;
  line = __LINE__ + 1;
  message = error_of([&] { checked(ones({4})); });
  CHECK(message.find("Checked: expected a 2-d input, got shape [4]") != std::string::npos);
  CHECK(names_line(message, line));
}

}  // namespace test_nn_call_sites
