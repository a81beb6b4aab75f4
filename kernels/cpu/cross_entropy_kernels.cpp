// cross_entropy (fused log_softmax + nll), its backward, and both in one pass on the CPU; the
// formulas are in loss_kernels.h. Rows go through in blocks whose z - max is laid out class by
// class (class c of the block's row r at c * rows + r), so a block's exponentials are one run
// through the vector exp (vector_exp.h) even when rows are short: the seed MLP's ten classes
// would fill less than a vector each. Each row's sum of exp still adds its classes in order, in double: on a confident
// row that sum is ~1 and the loss ~1e-6, which a float sum would round away. Losses are summed
// over rows in row order, so results do not depend on the thread count or the blocking.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/class_loss.h"
#include "kernels/cpu/loss_kernels.h"
#include "kernels/cpu/parallel_for.h"
#include "kernels/cpu/pointwise_loop.h"
#include "kernels/cpu/vector_exp.h"

namespace ember::cpu {

namespace {

// Values per block: 16 KiB of float scratch. A row with more classes is a block of its own.
constexpr int64_t kBlockValues = 4096;
// The most scratch values a thread keeps between calls (1 MiB of floats).
constexpr size_t kKeptValues = size_t{1} << 18;

// One block of rows [first, first + rows) of the logits, in the compute type C.
template <typename C>
struct RowBlock {
  int64_t first = 0;
  int64_t rows = 0;
  std::vector<C> exponentials;  // exp(z - max), class-major
  std::vector<C> maxima;
  std::vector<double> totals;   // per row: the sum of its exponentials, in class order

  C exponential(int64_t row, int64_t c) const { return exponentials[c * rows + row]; }
};

template <typename T, typename C>
void fill_block(RowBlock<C>& block, const T* data, const ClassLoss& loss, int64_t first, int64_t rows) {
  const int64_t classes = loss.classes;
  block.first = first;
  block.rows = rows;
  block.exponentials.resize(rows * classes);
  block.maxima.resize(rows);
  block.totals.assign(rows, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = data + (first + r) * loss.row_stride;
    C maximum = -std::numeric_limits<C>::infinity();
    for (int64_t c = 0; c < classes; ++c) maximum = std::max(maximum, static_cast<C>(row[c * loss.class_stride]));
    block.maxima[r] = maximum;
    for (int64_t c = 0; c < classes; ++c)
      block.exponentials[c * rows + r] = static_cast<C>(row[c * loss.class_stride]) - maximum;
  }
  exp_in_place(block.exponentials.data(), rows * classes);
  for (int64_t c = 0; c < classes; ++c) {
    const C* column = block.exponentials.data() + c * rows;
    for (int64_t r = 0; r < rows; ++r) block.totals[r] += static_cast<double>(column[r]);
  }
}

// Calls body(block) for each block of rows, in row order when serial. Each thread keeps its
// scratch between calls, so a training step's losses allocate nothing once warm; a scratch grown
// past kKeptValues by a very long row is given back.
template <typename C, typename T, typename Body>
void for_each_block(const T* data, const ClassLoss& loss, bool parallel, Body&& body) {
  const int64_t per_block = loss.classes == 0 ? std::max<int64_t>(loss.rows, 1)
                                              : std::max<int64_t>(1, kBlockValues / loss.classes);
  const int64_t blocks = (loss.rows + per_block - 1) / per_block;
  parallel_for(blocks, parallel && blocks > 1, [&](int64_t b) {
    thread_local RowBlock<C> block;
    const int64_t first = b * per_block;
    fill_block(block, data, loss, first, std::min(per_block, loss.rows - first));
    body(static_cast<const RowBlock<C>&>(block));
    if (block.exponentials.capacity() > kKeptValues) block.exponentials = std::vector<C>();
  });
}

// What one pass over the logits writes: the loss, the logits' gradient from the loss's gradient
// `grad`, or both from the same exponentials (cross_entropy_with_backward, which compiled steps
// run in place of the pair): each output gets the same bits whichever op computes it.
struct CrossEntropyOutputs {
  const Tensor* loss = nullptr;
  const Tensor* grad_logits = nullptr;
  const Tensor* grad = nullptr;  // with grad_logits
};

template <typename T>
void cross_entropy_pass(const CrossEntropyOutputs& outputs, const Tensor& logits, const ClassLoss& loss) {
  using C = compute_t<T>;
  const T* data = logits.data_ptr<T>();
  const double keep = 1.0 - loss.label_smoothing;
  const double spread = loss.label_smoothing / static_cast<double>(loss.classes);
  const auto row_loss = [&](const RowBlock<C>& block, int64_t r) {
    const int64_t i = block.first + r;
    if (loss.ignored(i)) return 0.0;
    const T* row = data + i * loss.row_stride;
    // -log p_t = (max - z_t) + log(total): gaps from the maximum, not max + log(total) - z_t, which
    // with logits near 1e17 has no digits left for the loss.
    const double maximum = static_cast<double>(block.maxima[r]);
    const double log_total = std::log(block.totals[r]);
    const double nll = (maximum - static_cast<double>(static_cast<C>(row[loss.target_of(i) * loss.class_stride]))) +
                       log_total;
    if (loss.label_smoothing == 0.0) return nll;
    double gap_sum = 0.0;  // sum_c -log p_c = sum_c (max - z_c) + C log(total)
    for (int64_t c = 0; c < loss.classes; ++c)
      gap_sum += maximum - static_cast<double>(static_cast<C>(row[c * loss.class_stride]));
    return keep * nll + spread * (gap_sum + static_cast<double>(loss.classes) * log_total);
  };

  T* grad_out = outputs.grad_logits != nullptr ? outputs.grad_logits->data_ptr<T>() : nullptr;
  const GradScale<T> scale_of =
      grad_out != nullptr ? grad_scale<T>(*outputs.grad, loss) : GradScale<T>{nullptr, 0, loss};
  const C grad_keep = static_cast<C>(keep);
  const C grad_spread = static_cast<C>(spread);
  const auto write_gradient = [&](const RowBlock<C>& block, int64_t r) {
    const int64_t i = block.first + r;
    T* out_row = grad_out + i * loss.classes;
    if (loss.ignored(i)) {
      for (int64_t c = 0; c < loss.classes; ++c) out_row[c] = static_cast<T>(C(0));
      return;
    }
    const C inverse_total = static_cast<C>(1.0 / block.totals[r]);
    const C scale = static_cast<C>(scale_of(i));
    const int64_t target = loss.target_of(i);
    for (int64_t c = 0; c < loss.classes; ++c) {
      const C hot = c == target ? grad_keep : C(0);
      out_row[c] = static_cast<T>(scale * (block.exponential(r, c) * inverse_total - grad_spread - hot));
    }
  };

  T* loss_out = outputs.loss != nullptr ? outputs.loss->data_ptr<T>() : nullptr;
  const bool parallel = runs_in_parallel(loss);
  const bool reduced = loss.reduction != kReductionNone;
  // A reduced loss adds the rows in row order: directly when serial, through a buffer when not.
  std::vector<double> per_row(loss_out != nullptr && reduced && parallel ? loss.rows : 0);
  double total = 0.0;
  for_each_block<C>(data, loss, parallel, [&](const RowBlock<C>& block) {
    for (int64_t r = 0; r < block.rows; ++r) {
      if (loss_out != nullptr) {
        const double value = row_loss(block, r);
        if (!reduced) {
          loss_out[block.first + r] = static_cast<T>(value);
        } else if (parallel) {
          per_row[block.first + r] = value;
        } else {
          total += value;
        }
      }
      if (grad_out != nullptr) write_gradient(block, r);
    }
  });
  if (loss_out == nullptr || !reduced) return;
  for (double value : per_row) total += value;
  loss_out[0] = static_cast<T>(loss.reduction == kReductionMean ? total / static_cast<double>(loss.counted) : total);
}

}  // namespace

void cross_entropy_kernel(const OpCall& call, TensorList& outputs) {
  const ClassLoss loss = class_loss(call, call.input(0), call.input(1));
  dispatch_floating(call.input(0).dtype(), "cross_entropy", [&](auto zero) {
    cross_entropy_pass<decltype(zero)>({.loss = &outputs[0]}, call.input(0), loss);
  });
}

void cross_entropy_backward_kernel(const OpCall& call, TensorList& outputs) {
  const ClassLoss loss = class_loss(call, call.input(1), call.input(2));
  dispatch_floating(call.input(1).dtype(), "cross_entropy_backward", [&](auto zero) {
    cross_entropy_pass<decltype(zero)>({.grad_logits = &outputs[0], .grad = &call.input(0)}, call.input(1), loss);
  });
}

void cross_entropy_with_backward_kernel(const OpCall& call, TensorList& outputs) {
  const ClassLoss loss = class_loss(call, call.input(1), call.input(2));
  dispatch_floating(call.input(1).dtype(), "cross_entropy_with_backward", [&](auto zero) {
    cross_entropy_pass<decltype(zero)>({.loss = &outputs[0], .grad_logits = &outputs[1], .grad = &call.input(0)},
                                       call.input(1), loss);
  });
}

}  // namespace ember::cpu
