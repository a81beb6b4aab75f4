// GradScaler: scaling, the device-side inf/nan check while unscaling, the skipped step and the
// scale update, following torch/cuda/amp/grad_scaler.py (PyTorch 1.13).
#include "runtime/amp/grad_scaler.h"

#include <cmath>
#include <string_view>

#include "runtime/dispatch.h"
#include "runtime/functional.h"

namespace ember::amp {

namespace {

void check_growth_factor(double factor) {
  check(factor > 1.0 && std::isfinite(factor), "GradScaler: growth_factor must be > 1 and finite, got {}", factor);
}

void check_backoff_factor(double factor) {
  check(factor > 0.0 && factor < 1.0, "GradScaler: backoff_factor must be in (0, 1), got {}", factor);
}

void check_growth_interval(int64_t interval) {
  check(interval >= 1, "GradScaler: growth_interval must be at least 1, got {}", interval);
}

// The scale is a float32 number, as PyTorch's scale tensor: products are rounded to float.
double as_float32(double value) { return static_cast<double>(static_cast<float>(value)); }

// `scale` as stored (float32), refused unless it and the float32 inverse unscale_ multiplies by
// are positive and finite: 1e39 is inf as float32 (every step skipped), 1e-50 is 0 and the inverse
// of 1e-39 is inf (NaN parameters after the first unscale). `what` names the function and value.
double checked_scale(std::string_view what, double scale) {
  check(scale > 0.0 && std::isfinite(scale), "{} must be positive and finite, got {}", what, scale);
  const double stored = as_float32(scale);
  check(stored > 0.0 && std::isfinite(stored),
        "{} {} is {} as float32, the type the scale is kept in (float32 scales range over about 2.9e-39 to "
        "3.4e38)",
        what, scale, stored);
  const double inverse = as_float32(1.0 / stored);
  check(std::isfinite(inverse),
        "{} {} has the inverse {} as float32, which unscale_ multiplies the gradients by (float32 scales range "
        "over about 2.9e-39 to 3.4e38)",
        what, scale, inverse);
  return stored;
}

// A 0-d tensor that is nan exactly when `grad` holds an inf or a nan: inf * 0 and nan * 0 are nan,
// finite * 0 is 0, and a sum of zeros cannot overflow the way a sum of the gradients could.
Tensor non_finite_indicator(const Tensor& grad) { return sum(mul(grad, 0.0)); }

}  // namespace

GradScaler::GradScaler(GradScalerOptions options, Where where) : options_(options) {
  CallSiteScope site(where);
  scale_ = checked_scale("GradScaler: init_scale", options.init_scale);
  check_growth_factor(options.growth_factor);
  check_backoff_factor(options.backoff_factor);
  check_growth_interval(options.growth_interval);
}

Tensor GradScaler::scale(const Tensor& outputs, Where where) {
  if (!options_.enabled) return outputs;
  CallSiteScope site(where);
  check(outputs.defined(), "GradScaler::scale: the outputs are an undefined tensor");
  check(is_floating(outputs.dtype()), "GradScaler::scale: expected floating-point outputs, got {}",
        outputs.dtype());
  if (!scale_tensor_.defined()) {
    // Made outside any capture: a compiled function calling scale() first must read the scale as
    // state at each replay, not as the constant a captured full() would fold into.
    const DispatchModesHidden outside_capture;
    scale_tensor_ = full({}, scale_, {.dtype = kFloat32, .device = outputs.device()});
  }
  const Tensor scale = scale_tensor_.device() == outputs.device() ? scale_tensor_ : scale_tensor_.to(outputs.device());
  // PyTorch multiplies by a [1]-shaped float32 scale, which lifts 16-bit outputs to float32: a
  // float16 loss times 65536 would overflow float16's range (65504).
  const Tensor widened = element_size(outputs.dtype()) == 2 ? outputs.to(kFloat32) : outputs;
  return mul(widened, scale);
}

void GradScaler::unscale_(optim::Optimizer& optimizer, Where where) {
  if (!options_.enabled) return;
  CallSiteScope site(where);
  OptimizerRecord& record = records_[&optimizer];
  check(record.stage != Stage::Unscaled,
        "GradScaler::unscale_: already called on this optimizer since the last update()");
  check(record.stage != Stage::Stepped, "GradScaler::unscale_: called after step(); call update() first");
  check(scale_tensor_.defined(),
        "GradScaler::unscale_: scale() was never called, so the gradients were not scaled by this scaler");
  NoGradGuard no_grad;
  // Every gradient is checked before any is unscaled, as PyTorch does: a failed call must leave
  // them all scaled, or a retried step would unscale some twice.
  const std::vector<Tensor> params = optimizer.parameters();
  for (size_t index = 0; index < params.size(); ++index)
    check(!params[index].grad().defined() || params[index].grad().dtype() != kFloat16,
          "GradScaler::unscale_: parameter {} (shape {}) has a float16 gradient; keep float32 parameters "
          "and let autocast cast them",
          index, params[index].sizes());
  // PyTorch computes 1 / scale in float64 and rounds it to float32.
  const double inverse = as_float32(1.0 / scale_);
  Tensor total;
  for (const Tensor& param : params) {
    Tensor grad = param.grad();
    if (!grad.defined()) continue;
    // Checked before unscaling, as PyTorch does: with a scale below 1 the unscaled gradient
    // could overflow although the scaled one is finite.
    Tensor indicator = non_finite_indicator(grad);
    if (total.defined() && indicator.device() != total.device()) indicator = indicator.to(total.device());
    total = total.defined() ? add(total, indicator) : indicator;
    if (inverse != 1.0) mul_(grad, inverse);
  }
  record.found_inf = total.defined() ? ne(total, total) : Tensor();
  record.found_host.reset();
  record.stage = Stage::Unscaled;
}

bool GradScaler::read_found_inf(OptimizerRecord& record) {
  if (!record.found_host) record.found_host = record.found_inf.item() != 0.0;
  return *record.found_host;
}

bool GradScaler::step(optim::Optimizer& optimizer, Where where) {
  CallSiteScope site(where);  // also for the optimizer's step, whose errors then name this call's line
  if (!options_.enabled) {
    optimizer.step();
    return true;
  }
  OptimizerRecord& record = records_[&optimizer];
  check(record.stage != Stage::Stepped, "GradScaler::step: already called on this optimizer since the last update()");
  if (record.stage == Stage::Ready) unscale_(optimizer);
  check(record.found_inf.defined(),
        "GradScaler::step: no inf/nan checks were recorded for this optimizer (none of its parameters has a "
        "gradient)");
  const bool found = read_found_inf(record);  // the step's one host read
  if (!found) optimizer.step();
  record.stage = Stage::Stepped;
  return !found;
}

void GradScaler::update(Where where) {
  if (!options_.enabled) return;
  CallSiteScope site(where);
  bool recorded = false;
  bool found = false;
  for (auto& [optimizer, record] : records_) {
    if (!record.found_inf.defined()) continue;
    recorded = true;
    found = read_found_inf(record) || found;
  }
  check(recorded, "GradScaler::update: no inf/nan checks were recorded; call step() or unscale_() first");
  records_.clear();
  if (found) {
    growth_tracker_ = 0;
    set_scale(as_float32(scale_ * options_.backoff_factor));
    return;
  }
  if (++growth_tracker_ < options_.growth_interval) return;
  growth_tracker_ = 0;
  const double grown = as_float32(scale_ * options_.growth_factor);
  if (std::isfinite(grown)) set_scale(grown);  // float32 overflow: keep the scale
}

void GradScaler::update(double new_scale, Where where) {
  if (!options_.enabled) return;
  CallSiteScope site(where);
  const double scale = checked_scale("GradScaler::update: new_scale", new_scale);
  records_.clear();
  set_scale(scale);
}

void GradScaler::set_scale(double scale) {
  scale_ = scale;
  if (scale_tensor_.defined()) {
    NoGradGuard no_grad;
    fill_(scale_tensor_, scale_);  // in place: a compiled graph keeps reading the same tensor
  }
}

double GradScaler::get_scale() const { return options_.enabled ? scale_ : 1.0; }

void GradScaler::set_growth_factor(double factor, Where where) {
  CallSiteScope site(where);
  check_growth_factor(factor);
  options_.growth_factor = factor;
}

void GradScaler::set_backoff_factor(double factor, Where where) {
  CallSiteScope site(where);
  check_backoff_factor(factor);
  options_.backoff_factor = factor;
}

void GradScaler::set_growth_interval(int64_t interval, Where where) {
  CallSiteScope site(where);
  check_growth_interval(interval);
  options_.growth_interval = interval;
}

OrderedDict<double> GradScaler::state_dict() const {
  if (!options_.enabled) return {};
  return {{"scale", scale_},
          {"growth_factor", options_.growth_factor},
          {"backoff_factor", options_.backoff_factor},
          {"growth_interval", static_cast<double>(options_.growth_interval)},
          {"_growth_tracker", static_cast<double>(growth_tracker_)}};
}

void GradScaler::load_state_dict(const OrderedDict<double>& state, Where where) {
  if (!options_.enabled) return;
  CallSiteScope site(where);
  check(!state.empty(), "GradScaler::load_state_dict: the state is empty (was it saved by a disabled GradScaler?)");
  const auto value = [&](const char* key) {
    const double* found = state.find(key);
    check(found != nullptr, "GradScaler::load_state_dict: missing key '{}'", key);
    return *found;
  };
  const auto whole_number = [&](const char* key, double minimum) {
    const double number = value(key);
    check(number >= minimum && number == std::floor(number) && number <= 9.0e15,
          "GradScaler::load_state_dict: '{}' must be a whole number >= {}, got {}", key, minimum, number);
    return static_cast<int64_t>(number);
  };
  const double scale = checked_scale("GradScaler::load_state_dict: 'scale'", value("scale"));
  const double growth_factor = value("growth_factor");
  check_growth_factor(growth_factor);
  const double backoff_factor = value("backoff_factor");
  check_backoff_factor(backoff_factor);
  const int64_t growth_interval = whole_number("growth_interval", 1);
  const int64_t growth_tracker = whole_number("_growth_tracker", 0);
  options_.growth_factor = growth_factor;
  options_.backoff_factor = backoff_factor;
  options_.growth_interval = growth_interval;
  growth_tracker_ = growth_tracker;
  set_scale(scale);
}

}  // namespace ember::amp
