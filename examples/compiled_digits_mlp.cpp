// The digits MLP of digits_mlp.cpp, its training step compiled: forward, backward and the Adam
// update become one graph with fused generated kernels, captured on the second call and replayed
// after. The loader's last batch of each epoch is smaller (1,437 training images in batches of 32),
// so the batch dim turns dynamic: that size is captured once more, with the kernels it already
// has. At the end, explain() says what the compile stage did.
#include <cstdio>

#include "graph/compile.h"
#include "runtime/ember.h"

namespace F = ember::nn::functional;

namespace {
const char* kDigitsPath = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz";
}

int main(int argc, char** argv) {
  const char* path = argc > 1 ? argv[1] : kDigitsPath;
  ember::manual_seed(0);
  ember::Tensor table = ember::data::read_csv(path);  // [1797, 65] float32: 64 pixels, then the label
  const int64_t rows = table.size(0);
  ember::Tensor order = ember::from_vector(ember::data::random_permutation(rows, 1234, 0));
  ember::Tensor shuffled = ember::index_select(table, 0, order);
  ember::Tensor pixels = ember::div(shuffled.slice(1, 0, 64), 16.0).contiguous();
  ember::Tensor labels = shuffled.select(1, 64).to(ember::kInt64);
  const int64_t train_rows = rows * 4 / 5;
  ember::Tensor x_train = pixels.slice(0, 0, train_rows), y_train = labels.slice(0, 0, train_rows);
  ember::Tensor x_test = pixels.slice(0, train_rows, rows), y_test = labels.slice(0, train_rows, rows);

  auto model = ember::nn::Sequential(ember::nn::Linear(64, 128), ember::nn::ReLU(), ember::nn::Linear(128, 10));
  ember::optim::Adam opt(model->parameters(), {.lr = 3e-3});
  auto train_step = ember::compile(
      [&](const ember::Tensor& x, const ember::Tensor& y) {
        opt.zero_grad();
        auto loss = F::cross_entropy(model->forward(x), y);
        loss.backward();
        opt.step();
        return loss;
      },
      {.fullgraph = true});  // a host read inside the step would be an error, not a silent slowdown

  ember::data::DataLoader loader(ember::data::TensorDataset(x_train, y_train), {.batch_size = 32, .shuffle = true});
  for (int epoch = 0; epoch < 30; ++epoch) {
    double total = 0.0;
    int batches = 0;
    for (auto& [x, y] : loader) {
      total += train_step(x, y).item();  // the loss is read after the compiled call
      ++batches;
    }
    if (epoch % 5 == 4) std::printf("epoch %2d  train loss %.4f\n", epoch + 1, total / batches);
  }

  ember::NoGradGuard no_grad;
  model->eval();
  ember::Tensor predicted = ember::argmax(model->forward(x_test), 1);
  const double accuracy = ember::mean(ember::eq(predicted, y_test).to(ember::kFloat32)).item();
  std::printf("test accuracy %.2f%% (%lld test images)\n", accuracy * 100.0, static_cast<long long>(rows - train_rows));
  std::printf("%s", train_step.state().explain().c_str());
  return 0;
}
