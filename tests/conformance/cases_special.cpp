// Conformance cases for torch.special's pointwise ops (runtime/ops/special_ops.cpp): lgamma,
// digamma, polygamma (n = 0 to 3), erfinv, i0, i0e, i1, i1e, ndtri, log_ndtr and erfcx, against
// the long-double references of tests/runtime/special_reference.h (libm's lgammal and erfcl,
// bisection, power series; none shares code with kernels/special_*.h) and finite differences on
// every layout and dtype the harness runs; integer inputs give float32.
#include <doctest/doctest.h>

#include <string>

#include "reference.h"
#include "runtime/special_reference.h"

namespace conformance::cases_special {
namespace {

namespace special_reference = ember::testing::special_reference;

double bessel_i0(double x) { return special_reference::bessel_i(0, x, false); }
double bessel_i0e(double x) { return special_reference::bessel_i(0, x, true); }
double bessel_i1(double x) { return special_reference::bessel_i(1, x, false); }
double bessel_i1e(double x) { return special_reference::bessel_i(1, x, true); }

// Domains keep a margin from the poles of lgamma and digamma (0, -1, -2) and from the kink of
// the scaled Bessel functions at 0 (e^-|x|), where finite differences are not valid.
const UnaryOp kSpecialUnary[] = {
    {"lgamma", special_reference::lgamma, avoiding({-2.0, -1.0, 0.0}, -2.9, 4.0)},
    {"digamma", special_reference::digamma, avoiding({-2.0, -1.0, 0.0}, -2.9, 4.0)},
    {"erfinv", special_reference::erfinv, real(-0.9, 0.9)},
    {"i0", bessel_i0, real(-3.0, 3.0)},
    {"i0e", bessel_i0e, avoiding({0.0}, -3.0, 3.0)},
    {"i1", bessel_i1, real(-3.0, 3.0)},
    {"i1e", bessel_i1e, avoiding({0.0}, -3.0, 3.0)},
    {"ndtri", special_reference::ndtri, real(0.02, 0.98)},
    {"log_ndtr", special_reference::log_ndtr, real(-8.0, 3.0)},
    {"erfcx", special_reference::erfcx, real(-2.0, 3.0)},
};

Case special_case(const char* op, const Variant& variant, ember::Attrs attrs, std::function<double(double)> math) {
  Case c{.op = op,
         .label = variant.label,
         .inputs = variant.inputs,
         .attrs = attrs,
         .reference = [math](const std::vector<RefTensor>& in,
                             const Attrs&) { return std::vector<RefTensor>{unary(in[0], math)}; },
         .gradcheck = variant.gradcheck};
  return with_half(c, 1e-2);
}

std::vector<Case> special_cases() {
  std::vector<Case> cases;
  for (const UnaryOp& op : kSpecialUnary)
    for (const Variant& variant : unary_variants(op.domain)) cases.push_back(special_case(op.op, variant, {}, op.math));
  // polygamma(3, x) grows like 6 / d^4 at a distance d from a pole: a wider margin keeps it
  // within float16 and its finite differences valid.
  Domain away_from_poles = avoiding({-2.0, -1.0, 0.0}, -2.9, 4.0);
  away_from_poles.margin = 0.25;
  for (int64_t n = 0; n <= 3; ++n) {
    for (const Variant& variant : unary_variants(away_from_poles)) {
      Case c = special_case("polygamma", variant, {{"n", n}},
                            [n](double x) { return special_reference::polygamma(static_cast<int>(n), x); });
      c.label += ", n=" + std::to_string(n);
      cases.push_back(c);
    }
  }
  // Integers become float32, as torch's.
  Case integral{.op = "lgamma",
                .label = "int64 [3,4]",
                .inputs = {{{3, 4}, indices(1, 9)}},
                .reference = [](const std::vector<RefTensor>& in, const Attrs&) {
                  return std::vector<RefTensor>{unary(in[0], special_reference::lgamma, ember::kFloat32)};
                }};
  cases.push_back(integral);
  return cases;
}

const CaseRegistration registration("special", special_cases);

TEST_CASE("conformance: lgamma, digamma, polygamma, erfinv, i0, i0e, i1, i1e, ndtri, log_ndtr, erfcx") {
  run_cases(special_cases());
}

}  // namespace
}  // namespace conformance::cases_special
