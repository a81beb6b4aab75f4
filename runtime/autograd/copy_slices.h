// In-place updates through a view while recording gradients (PyTorch's CopySlices). After
// `row = t.slice(0, 0, 1); row.add_(b)` the base t holds the update in the row's elements, so t's
// history becomes a CopySlices node: t's gradient passes unchanged outside the view's elements;
// inside, it goes through the in-place op's own backward, which also gives b its gradient and the
// view's old value (and so t's old value) theirs. The view itself is then remade from t by the
// view-history replay (view_history.h), like every other view of t.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/autograd/node.h"
#include "runtime/autograd/view_history.h"

namespace ember::autograd {

// One view op on the way from the root base to the updated view.
struct ViewStep {
  const OpDef* op;
  Attrs attrs;
};

class CopySlices final : public Node {
 public:
  // `fn` is the in-place op's node over the view, `mutated` the input it writes; `base_edge` is
  // where the base's gradient went before the update.
  CopySlices(TensorMeta base, std::vector<ViewStep> path, std::shared_ptr<OpNode> fn, int mutated,
             Edge base_edge);
  std::string name() const override { return "CopySlices(" + fn_->name() + ")"; }
  std::vector<Tensor> apply(std::vector<Tensor>&& grad_outputs) override;
  // Recorded (create_graph): the op's backward through apply_with_history, the copy into the
  // region an in-place update through a view of the recorded result.
  std::vector<Tensor> apply_with_history(std::vector<Tensor>&& grad_outputs,
                                         const std::shared_ptr<Node>& self) override;
  void release_saved() override { fn_->release_saved(); }
  bool saved_released() const override { return fn_->saved_released(); }

 private:
  std::vector<Tensor> run(std::vector<Tensor>&& grad_outputs, const std::shared_ptr<OpNode>* recorded);

  TensorMeta base_;
  std::vector<ViewStep> path_;
  std::shared_ptr<OpNode> fn_;
  int mutated_;
};

// The root base of `view` and the view ops that lead from it to `view`, or an empty path with the
// reason why the update cannot be differentiated (a view made without grad mode, say).
struct ViewPath {
  Tensor root;
  std::vector<ViewStep> steps;
  std::string why_not;
};
ViewPath view_path(const Tensor& view);

}  // namespace ember::autograd
