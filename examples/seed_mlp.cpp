// The seed MLP: the C++ twin of the source material's baseline training loop.
// Linear(100,256)-ReLU-Linear(256,10), CrossEntropy, Adam lr 1e-3, batch 32, 10,000 synthetic
// samples (x ~ N(0,1), y uniform in 0..9), shuffled loader; loss every 50 steps, throughput at
// the end.
#include <chrono>
#include <cstdio>

#include "runtime/ember.h"

namespace F = ember::nn::functional;

int main(int argc, char** argv) {
  const int epochs = argc > 1 ? std::atoi(argv[1]) : 1;
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
}
