// The loss modules of runtime/functional_losses_more.h (torch.nn's MarginRankingLoss,
// HingeEmbeddingLoss, SoftMarginLoss, MultiLabelSoftMarginLoss, MultiMarginLoss,
// MultiLabelMarginLoss, CosineEmbeddingLoss, TripletMarginLoss, TripletMarginWithDistanceLoss,
// CTCLoss, PoissonNLLLoss and GaussianNLLLoss), made as those of loss.h: each holds its options
// and calls the function of the same name; the weights of MultiLabelSoftMarginLoss and MultiMarginLoss are buffers.
#pragma once

#include <utility>

#include "runtime/functional_losses_more.h"
#include "runtime/nn/modules/loss.h"

namespace ember::nn {

class MarginRankingLossImpl : public LossModule {
 public:
  explicit MarginRankingLossImpl(MarginRankingLossOptions options = {})
      : LossModule("MarginRankingLoss"), options_(options) {}
  Tensor forward(const Tensor& input1, const Tensor& input2, const Tensor& target, Where where = Where::current());
  const MarginRankingLossOptions& options() const { return options_; }

 private:
  MarginRankingLossOptions options_;
};

class HingeEmbeddingLossImpl : public LossModule {
 public:
  explicit HingeEmbeddingLossImpl(HingeEmbeddingLossOptions options = {})
      : LossModule("HingeEmbeddingLoss"), options_(options) {}
  Tensor forward(const Tensor& input, const Tensor& target, Where where = Where::current());
  const HingeEmbeddingLossOptions& options() const { return options_; }

 private:
  HingeEmbeddingLossOptions options_;
};

class SoftMarginLossImpl : public LossModule {
 public:
  explicit SoftMarginLossImpl(SoftMarginLossOptions options = {}) : LossModule("SoftMarginLoss"), options_(options) {}
  Tensor forward(const Tensor& input, const Tensor& target, Where where = Where::current());
  const SoftMarginLossOptions& options() const { return options_; }

 private:
  SoftMarginLossOptions options_;
};

class MultiLabelSoftMarginLossImpl : public LossModule {
 public:
  explicit MultiLabelSoftMarginLossImpl(MultilabelSoftMarginLossOptions options = {});
  Tensor forward(const Tensor& input, const Tensor& target, Where where = Where::current());
  const MultilabelSoftMarginLossOptions& options() const { return options_; }
  Tensor weight;  // the buffer "weight", undefined without one

 private:
  MultilabelSoftMarginLossOptions options_;
};

class MultiMarginLossImpl : public LossModule {
 public:
  explicit MultiMarginLossImpl(MultiMarginLossOptions options = {});
  Tensor forward(const Tensor& input, const Tensor& target, Where where = Where::current());
  const MultiMarginLossOptions& options() const { return options_; }
  Tensor weight;  // the buffer "weight", undefined without one

 private:
  MultiMarginLossOptions options_;
};

class MultiLabelMarginLossImpl : public LossModule {
 public:
  explicit MultiLabelMarginLossImpl(MultilabelMarginLossOptions options = {})
      : LossModule("MultiLabelMarginLoss"), options_(options) {}
  Tensor forward(const Tensor& input, const Tensor& target, Where where = Where::current());
  const MultilabelMarginLossOptions& options() const { return options_; }

 private:
  MultilabelMarginLossOptions options_;
};

class CosineEmbeddingLossImpl : public LossModule {
 public:
  explicit CosineEmbeddingLossImpl(CosineEmbeddingLossOptions options = {})
      : LossModule("CosineEmbeddingLoss"), options_(options) {}
  Tensor forward(const Tensor& input1, const Tensor& input2, const Tensor& target, Where where = Where::current());
  const CosineEmbeddingLossOptions& options() const { return options_; }

 private:
  CosineEmbeddingLossOptions options_;
};

class TripletMarginLossImpl : public LossModule {
 public:
  explicit TripletMarginLossImpl(TripletMarginLossOptions options = {})
      : LossModule("TripletMarginLoss"), options_(options) {}
  Tensor forward(const Tensor& anchor, const Tensor& positive, const Tensor& negative, Where where = Where::current());
  const TripletMarginLossOptions& options() const { return options_; }

 private:
  TripletMarginLossOptions options_;
};

class TripletMarginWithDistanceLossImpl : public LossModule {
 public:
  explicit TripletMarginWithDistanceLossImpl(TripletMarginWithDistanceLossOptions options = {})
      : LossModule("TripletMarginWithDistanceLoss"), options_(std::move(options)) {}
  Tensor forward(const Tensor& anchor, const Tensor& positive, const Tensor& negative, Where where = Where::current());
  const TripletMarginWithDistanceLossOptions& options() const { return options_; }

 private:
  TripletMarginWithDistanceLossOptions options_;
};

class CTCLossImpl : public LossModule {
 public:
  explicit CTCLossImpl(CTCLossOptions options = {}) : LossModule("CTCLoss"), options_(options) {}
  Tensor forward(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                 const Tensor& target_lengths, Where where = Where::current());
  const CTCLossOptions& options() const { return options_; }

 private:
  CTCLossOptions options_;
};

class PoissonNLLLossImpl : public LossModule {
 public:
  explicit PoissonNLLLossImpl(PoissonNLLLossOptions options = {}) : LossModule("PoissonNLLLoss"), options_(options) {}
  Tensor forward(const Tensor& input, const Tensor& target, Where where = Where::current());
  const PoissonNLLLossOptions& options() const { return options_; }

 private:
  PoissonNLLLossOptions options_;
};

class GaussianNLLLossImpl : public LossModule {
 public:
  explicit GaussianNLLLossImpl(GaussianNLLLossOptions options = {})
      : LossModule("GaussianNLLLoss"), options_(options) {}
  Tensor forward(const Tensor& input, const Tensor& target, const Tensor& var, Where where = Where::current());
  const GaussianNLLLossOptions& options() const { return options_; }

 private:
  GaussianNLLLossOptions options_;
};

// The holders: `nn::TripletMarginLoss loss({.margin = 0.5}); loss(anchor, positive, negative)`.
class MarginRankingLoss : public ModuleHolder<MarginRankingLossImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit MarginRankingLoss(MarginRankingLossOptions options = {})
      : ModuleHolder(std::make_shared<MarginRankingLossImpl>(options)) {}
};

class HingeEmbeddingLoss : public ModuleHolder<HingeEmbeddingLossImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit HingeEmbeddingLoss(HingeEmbeddingLossOptions options = {})
      : ModuleHolder(std::make_shared<HingeEmbeddingLossImpl>(options)) {}
};

class SoftMarginLoss : public ModuleHolder<SoftMarginLossImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit SoftMarginLoss(SoftMarginLossOptions options = {})
      : ModuleHolder(std::make_shared<SoftMarginLossImpl>(options)) {}
};

class MultiLabelSoftMarginLoss : public ModuleHolder<MultiLabelSoftMarginLossImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit MultiLabelSoftMarginLoss(MultilabelSoftMarginLossOptions options = {})
      : ModuleHolder(std::make_shared<MultiLabelSoftMarginLossImpl>(std::move(options))) {}
};

class MultiMarginLoss : public ModuleHolder<MultiMarginLossImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit MultiMarginLoss(MultiMarginLossOptions options = {})
      : ModuleHolder(std::make_shared<MultiMarginLossImpl>(std::move(options))) {}
};

class MultiLabelMarginLoss : public ModuleHolder<MultiLabelMarginLossImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit MultiLabelMarginLoss(MultilabelMarginLossOptions options = {})
      : ModuleHolder(std::make_shared<MultiLabelMarginLossImpl>(options)) {}
};

class CosineEmbeddingLoss : public ModuleHolder<CosineEmbeddingLossImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit CosineEmbeddingLoss(CosineEmbeddingLossOptions options = {})
      : ModuleHolder(std::make_shared<CosineEmbeddingLossImpl>(options)) {}
};

class TripletMarginLoss : public ModuleHolder<TripletMarginLossImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit TripletMarginLoss(TripletMarginLossOptions options = {})
      : ModuleHolder(std::make_shared<TripletMarginLossImpl>(options)) {}
};

class TripletMarginWithDistanceLoss : public ModuleHolder<TripletMarginWithDistanceLossImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit TripletMarginWithDistanceLoss(TripletMarginWithDistanceLossOptions options = {})
      : ModuleHolder(std::make_shared<TripletMarginWithDistanceLossImpl>(std::move(options))) {}
};

class CTCLoss : public ModuleHolder<CTCLossImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit CTCLoss(CTCLossOptions options = {}) : ModuleHolder(std::make_shared<CTCLossImpl>(options)) {}
};

class PoissonNLLLoss : public ModuleHolder<PoissonNLLLossImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit PoissonNLLLoss(PoissonNLLLossOptions options = {})
      : ModuleHolder(std::make_shared<PoissonNLLLossImpl>(options)) {}
};

class GaussianNLLLoss : public ModuleHolder<GaussianNLLLossImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit GaussianNLLLoss(GaussianNLLLossOptions options = {})
      : ModuleHolder(std::make_shared<GaussianNLLLossImpl>(options)) {}
};

}  // namespace ember::nn
