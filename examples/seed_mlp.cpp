// The seed MLP: the C++ twin of the source material's baseline training loop.
// Linear(100,256)-ReLU-Linear(256,10), CrossEntropy, Adam lr 1e-3, batch 32, 10,000 synthetic
// samples (x ~ N(0,1), y uniform in 0..9), shuffled loader; loss every 50 steps, throughput at
// the end.
//   seed_mlp [EPOCHS]   (default 1)
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "runtime/ember.h"

namespace F = ember::nn::functional;

namespace {

// The epochs argument: a whole number from 1 to 10,000, or 0 when it is not one (atoi read "abc"
// and "-1" as 0 epochs, and the run reported 0 steps at "inf us/step").
int parse_epochs(const char* text) {
  int epochs = 0;
  const char* end = text + std::strlen(text);
  const auto [stop, error] = std::from_chars(text, end, epochs);
  if (error != std::errc() || stop != end || epochs < 1 || epochs > 10'000) return 0;
  return epochs;
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc > 2) {
    std::fprintf(stderr, "usage: seed_mlp [EPOCHS]\n");
    return 2;
  }
  const int epochs = argc > 1 ? parse_epochs(argv[1]) : 1;
  if (epochs == 0) {
    std::fprintf(stderr, "seed_mlp: EPOCHS must be a whole number from 1 to 10000, got '%s'\n", argv[1]);
    return 2;
  }
  ember::manual_seed(0);
  const ember::Device device = ember::default_device();
  std::printf("seed_mlp on %s\n", device.str().c_str());

  ember::Tensor X = ember::randn({10000, 100});
  ember::Tensor Y = ember::randint(0, 10, {10000});
  auto model = ember::nn::Sequential(ember::nn::Linear(100, 256), ember::nn::ReLU(), ember::nn::Linear(256, 10));
  model->to(device);
  ember::optim::Adam opt(model->parameters(), {.lr = 1e-3});
  ember::data::DataLoader loader(ember::data::TensorDataset(X, Y),
                                 {.batch_size = 32, .shuffle = true, .num_workers = 2});

  int64_t step = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int epoch = 0; epoch < epochs; ++epoch) {
    for (auto& [x, y] : loader) {
      opt.zero_grad();
      auto loss = F::cross_entropy(model->forward(x.to(device)), y.to(device));
      loss.backward();
      opt.step();
      if (step % 50 == 0) std::printf("epoch %d step %4lld  loss %.4f\n", epoch, static_cast<long long>(step), loss.item());
      ++step;
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%lld steps in %.3f s: %.1f us/step, %.0f samples/s\n", static_cast<long long>(step), seconds,
              seconds * 1e6 / static_cast<double>(step), static_cast<double>(step) * 32 / seconds);
  return 0;
} catch (const std::exception& error) {
  std::fprintf(stderr, "seed_mlp: %s\n", error.what());  // EMBER_DEVICE naming a missing GPU, say
  return 1;
}
