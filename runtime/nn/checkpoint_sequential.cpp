// checkpoint_sequential: PyTorch's split of the modules, each segment but the last checkpointed.
#include "runtime/nn/checkpoint_sequential.h"

#include "runtime/error.h"

namespace ember::utils {

Tensor checkpoint_sequential(const nn::Sequential& model, int64_t segments, const Tensor& input,
                             CheckpointOptions options, Where where) {
  CallSiteScope site(where);
  const auto count = static_cast<int64_t>(model->size());
  check(segments >= 1 && segments <= count,
        "checkpoint_sequential: segments must be between 1 and the number of modules ({}), got {}", count, segments);
  const int64_t segment_size = count / segments;
  const std::shared_ptr<nn::SequentialImpl> modules = model.ptr();
  Tensor output = input;
  int64_t begin = 0;
  for (int64_t segment = 0; segment + 1 < segments; ++segment, begin += segment_size) {
    const int64_t end = begin + segment_size;
    output = checkpoint([modules, begin, end](const Tensor& x) { return modules->forward_range(begin, end, x); },
                        output, options, where);
  }
  return modules->forward_range(begin, count, output);
}

}  // namespace ember::utils
