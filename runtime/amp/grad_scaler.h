// amp::GradScaler: dynamic loss scaling for mixed-precision training (torch.cuda.amp.GradScaler,
// same defaults and update rule), on any device.
//
//   amp::GradScaler scaler;
//   for (...) {
//     optimizer.zero_grad();
//     Tensor loss;
//     { AutocastGuard autocast(kFloat16); loss = cross_entropy(model->forward(x), y); }
//     scaler.scale(loss).backward();  // gradients of loss * scale: small ones survive fp16
//     scaler.step(optimizer);         // unscales, skips the step if any gradient is inf/nan
//     scaler.update();                // backs off after an overflow, grows after clean steps
//   }
//
// The update rule (PyTorch's _amp_update_scale_): a step whose gradients hold an inf or nan
// multiplies the scale by backoff_factor and restarts the count of clean steps; growth_interval
// clean steps in a row multiply it by growth_factor (unless that overflows float32). The scale
// is a float32 value, as in PyTorch.
//
// The inf/nan check runs on the gradients' device as ember ops (sum(grad * 0) is nan exactly when
// grad holds an inf or nan); step() reads its one-element result on the host, the only host read
// per step. The scale lives on the host and in a 0-d float32 tensor that scale() multiplies by.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>

#include "runtime/nn/ordered_dict.h"
#include "runtime/optim/optimizer.h"
#include "runtime/tensor.h"

namespace ember::amp {

struct GradScalerOptions {
  double init_scale = 65536.0;  // 2^16; it and its inverse must be positive and finite in float32
  double growth_factor = 2.0;   // > 1
  double backoff_factor = 0.5;  // in (0, 1)
  int64_t growth_interval = 2000;
  bool enabled = true;  // false: every method is a pass-through (scale() returns its input)
};

class GradScaler {
 public:
  explicit GradScaler(GradScalerOptions options = {}, Where where = Where::current());

  // outputs * scale, in float32 for 16-bit outputs (float64 stays float64), recorded by autograd.
  // Errors of every call name the caller's line.
  Tensor scale(const Tensor& outputs, Where where = Where::current());

  // Divides the gradients of `optimizer`'s parameters by the scale, in place, and records whether
  // any of them held an inf or nan. At most once per optimizer between update()s; step() calls it
  // when the user has not (call it yourself to clip unscaled gradients before step()). A float16
  // gradient is refused before any gradient changes.
  void unscale_(optim::Optimizer& optimizer, Where where = Where::current());
  // Unscales if needed, then runs optimizer.step() unless a gradient was inf/nan. Returns whether
  // the optimizer stepped. Once per optimizer between update()s.
  bool step(optim::Optimizer& optimizer, Where where = Where::current());
  // Adjusts the scale from this iteration's inf/nan checks (see the header comment) and starts the
  // next iteration. The overload sets the scale directly (like init_scale, within float32's range
  // with its inverse) and leaves the growth count alone.
  void update(Where where = Where::current());
  void update(double new_scale, Where where = Where::current());

  // The current scale (init_scale before the first update; 1 when disabled). No device sync.
  double get_scale() const;
  int64_t get_growth_tracker() const { return growth_tracker_; }  // clean steps since the last change
  double get_growth_factor() const { return options_.growth_factor; }
  double get_backoff_factor() const { return options_.backoff_factor; }
  int64_t get_growth_interval() const { return options_.growth_interval; }
  void set_growth_factor(double factor, Where where = Where::current());
  void set_backoff_factor(double factor, Where where = Where::current());
  void set_growth_interval(int64_t interval, Where where = Where::current());
  bool is_enabled() const { return options_.enabled; }

  // PyTorch's keys: "scale", "growth_factor", "backoff_factor", "growth_interval",
  // "_growth_tracker" (empty when disabled). What ckpt::TrainingState saves as "scaler.<key>".
  OrderedDict<double> state_dict() const;
  // Validates every key and value before changing anything; a no-op when disabled.
  void load_state_dict(const OrderedDict<double>& state, Where where = Where::current());

 private:
  enum class Stage { Ready, Unscaled, Stepped };
  struct OptimizerRecord {
    Stage stage = Stage::Ready;
    Tensor found_inf;                // 0-d bool on the gradients' device; undefined: no gradients
    std::optional<bool> found_host;  // found_inf read back, once
  };

  bool read_found_inf(OptimizerRecord& record);
  void set_scale(double scale);

  GradScalerOptions options_;
  double scale_;  // a float32 value
  int64_t growth_tracker_ = 0;
  Tensor scale_tensor_;  // created by the first scale(), on the outputs' device
  std::unordered_map<const optim::Optimizer*, OptimizerRecord> records_;
};

}  // namespace ember::amp
