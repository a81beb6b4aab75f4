// Uses the installed ember the way a user's project does: tensors and autograd (ember::ember), a
// compiled training step (ember::graph, whose generated kernels compile against the installed
// headers) and a checkpoint saved and loaded back (ember::ckpt). Exits non-zero on a wrong answer.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "ckpt/coordinator.h"
#include "ckpt/training_state.h"
#include "graph/codegen_cpp.h"
#include "graph/compile.h"
#include "runtime/ember.h"

namespace {

bool report(const char* what, bool ok) {
  std::printf("consumer: %s %s\n", what, ok ? "ok" : "WRONG");
  return ok;
}

// A few SGD steps of a small MLP, compiled or eager, from the same seed; returns the last loss.
// Compiled, the steps after the capture must be replays of generated kernels built here.
double train(bool compiled, bool& replayed) {
  ember::manual_seed(7);
  ember::nn::Sequential model(ember::nn::Linear(4, 8), ember::nn::ReLU(), ember::nn::Linear(8, 2));
  ember::optim::SGD optimizer(model->parameters(), {.lr = 0.1});
  const ember::Tensor x = ember::randn({16, 4});
  const ember::Tensor y = ember::randn({16, 2});
  auto step = [&](const ember::Tensor& input, const ember::Tensor& target) {
    optimizer.zero_grad();
    ember::Tensor loss = ember::nn::functional::mse_loss(model->forward(input), target);
    loss.backward();
    optimizer.step();
    return loss;
  };
  double loss = 0;
  if (compiled) {
    auto compiled_step = ember::compile(step, {.fullgraph = true});
    const int compiler_runs_before = ember::graph::compiler_runs();
    for (int i = 0; i < 4; ++i) loss = compiled_step(x, y).item();
    replayed = compiled_step.state().replays() >= 2 && ember::graph::compiler_runs() > compiler_runs_before;
  } else {
    for (int i = 0; i < 4; ++i) loss = step(x, y).item();
  }
  return loss;
}

bool checkpoint_round_trip() {
  const std::filesystem::path root = std::filesystem::temp_directory_path() / "ember_consumer_ckpt";
  std::filesystem::remove_all(root);
  ember::manual_seed(3);
  ember::nn::Linear saved_layer(3, 2);
  ember::nn::Linear loaded_layer(3, 2);  // other initial weights
  ember::ckpt::SingleRank single;
  ember::ckpt::TrainingState saved{.model = saved_layer.ptr().get(), .step = 5};
  ember::ckpt::save_training_state(single, saved, {.root = root, .name = ember::ckpt::step_name(5)});
  ember::ckpt::TrainingState loaded{.model = loaded_layer.ptr().get()};
  ember::ckpt::load_training_state(single, root / ember::ckpt::step_name(5), loaded);
  std::filesystem::remove_all(root);
  return loaded.step == 5 &&
         loaded_layer->weight.to_vector<float>() == saved_layer->weight.to_vector<float>();
}

}  // namespace

int main() {
  ember::Tensor a = ember::from_vector<float>({1, 2, 3}).requires_grad_();
  ember::sum(ember::mul(a, a)).backward();
  bool ok = report("grad", a.grad().to_vector<float>() == std::vector<float>{2, 4, 6});
  bool replayed = false;
  const double eager = train(false, replayed), compiled = train(true, replayed);
  ok &= report("compiled step", replayed && std::abs(compiled - eager) <= 1e-6 * std::abs(eager) && eager > 0);
  // check_install.sh says where it installed the headers: generated kernels must use those.
  const char* installed = std::getenv("EMBER_EXPECTED_INCLUDE_DIR");
  const std::string compiler = ember::graph::host_compiler_description();
  ok &= report("generated kernels' headers",
               installed != nullptr && compiler.ends_with(std::string(" -I") + installed));
  ok &= report("checkpoint", checkpoint_round_trip());
  return ok ? 0 : 1;
}
