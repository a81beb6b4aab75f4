// checkpoint_sequential: PyTorch's split of the modules, each segment but the last checkpointed.
#include "runtime/nn/checkpoint_sequential.h"

#include <string>
#include <vector>

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
    const autograd::CheckpointFn run_segment = [modules, begin, end](const std::vector<Tensor>& x) {
      return std::vector<Tensor>{modules->forward_range(begin, end, x[0])};
    };
    // Its errors at the recomputation name the segment the caller cut, not a checkpoint it never wrote.
    const std::string name =
        fmt::format("checkpoint_sequential: segment {} (modules {} to {})", segment, begin, end - 1);
    output = detail::checkpoint_named(name, run_segment, {output}, options)[0];
  }
  return modules->forward_range(begin, count, output);
}

}  // namespace ember::utils
