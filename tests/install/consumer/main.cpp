// Uses the installed ember: one tensor op and a backward pass; exits non-zero on a wrong answer.
#include <cstdio>

#include "runtime/ember.h"

int main() {
  ember::Tensor a = ember::from_vector<float>({1, 2, 3}).requires_grad_();
  ember::Tensor b = ember::mul(a, a);
  ember::sum(b).backward();
  const std::vector<float> grad = a.grad().to_vector<float>();
  const bool ok = grad == std::vector<float>{2, 4, 6};
  std::printf("consumer: grad %s\n", ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
