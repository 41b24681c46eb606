#pragma once
// train.mixup: mixup and cutmix of a training batch with soft targets, as timm's Mixup
// (timm/data/mixup.py), on the batch where it trains. The partner of sample i is sample N-1-i
// (the batch reversed); a mix is drawn per batch, per pair or per element. The draws come from
// the run's seeded stream of that batch (seed, epoch, batch, rank), so the same run mixes the
// same way with any number of loader threads and after a resume; MixRandom is where tests
// replay the draws timm's own code made.

#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "config/experiment_options.hpp"
#include "runner/data/rng.hpp"

namespace runner::train {

/// The random numbers a mix takes, in the order timm's Mixup calls numpy for them.
class MixRandom {
 public:
  virtual ~MixRandom() = default;
  virtual double uniform() = 0;                            ///< np.random.rand()
  virtual double beta(double alpha) = 0;                   ///< np.random.beta(alpha, alpha)
  virtual int64_t randint(int64_t low, int64_t high) = 0;  ///< np.random.randint(low, high)
};

/// A MixRandom from the run's counter-based generator.
class RngMixRandom final : public MixRandom {
 public:
  explicit RngMixRandom(data::Rng rng) : rng_(rng) {}
  double uniform() override { return rng_.uniform(); }
  double beta(double alpha) override;
  int64_t randint(int64_t low, int64_t high) override;

 private:
  double gamma(double shape);
  data::Rng rng_;
};

/// One batch's mix: in batch mode one draw for all (timm's lam, a Python float), else per
/// element: the weight of its own label (`lam`), of its own pixels outside the box (`blend`: lam
/// for mixup, 1 for cutmix and unmixed) and the box its partner's pixels fill (empty: none).
struct MixPlan {
  bool per_batch = true;
  double batch_lam = 1.0;
  bool batch_cutmix = false;
  int64_t yl = 0, yh = 0, xl = 0, xh = 0;  ///< batch mode's box
  std::vector<float> lam, blend;           ///< elem/pair: one per element, float32 as timm's
  std::vector<int64_t> box_yl, box_yh, box_xl, box_xh;
  bool mixes() const;  ///< whether any element is mixed
};

class Mixup {
 public:
  /// `num_classes`: the soft targets' width.
  Mixup(const config::MixupOptions& options, int64_t num_classes);

  /// Whether the 0-based `epoch` mixes (timm's --mixup-off-epoch: epochs from off_epoch on
  /// do not; their targets are still smoothed one-hot).
  bool mixes_in(int64_t epoch) const;

  /// The mix of a batch of `batch` images of `height` x `width`, from `random` (drawn only when
  /// `enabled`, as timm's mixup_enabled).
  MixPlan draw(MixRandom& random, int64_t batch, int64_t height, int64_t width, bool enabled) const;

  /// The run's stream for one batch: the same for the same (seed, epoch, batch, rank).
  static data::Rng stream(uint64_t seed, int64_t epoch, int64_t batch, int rank, int world_size);

  /// Mixes `images` [N, C, H, W] (not changed) by `plan`; returns the mixed images and the soft
  /// targets [N, num_classes] (float32) of `labels` [N]. Device ops only: the plan's numbers
  /// travel to the images' device, nothing is read back.
  std::pair<torch::Tensor, torch::Tensor> apply(const MixPlan& plan, const torch::Tensor& images,
                                                const torch::Tensor& labels) const;

  /// Batch `batch` of the 0-based `epoch` on `rank` of `world_size`, as the run trains on it:
  /// drawn from that batch's own stream (the same mix resumed or not), then applied.
  std::pair<torch::Tensor, torch::Tensor> mix_batch(uint64_t seed, int64_t epoch, int64_t batch,
                                                    int rank, int world_size,
                                                    const torch::Tensor& images,
                                                    const torch::Tensor& labels) const;

  /// lam * onehot(y) + (1 - lam) * onehot(y reversed), smoothed (timm's mixup_target).
  torch::Tensor soft_targets(const torch::Tensor& labels, const torch::Tensor& lam) const;
  torch::Tensor soft_targets(const torch::Tensor& labels, double lam) const;

 private:
  struct Box {
    int64_t yl, yh, xl, xh;
    double lam;  ///< corrected to the box's area where timm corrects it
  };
  Box cutmix_box(MixRandom& random, int64_t height, int64_t width, double lam) const;
  /// timm's one_hot of the labels and of the labels reversed, smoothed (off = s / C).
  std::pair<torch::Tensor, torch::Tensor> smoothed_one_hots(const torch::Tensor& labels) const;
  /// timm's _params_per_elem for `count` elements: each one's lam and whether it is cutmix.
  void params_per_element(MixRandom& random, int64_t count, bool enabled, std::vector<float>& lam,
                          std::vector<uint8_t>& cutmix) const;

  config::MixupOptions options_;
  double cutmix_alpha_;  ///< 1 when cutmix_minmax is set (timm forces it)
  int64_t num_classes_;
};

}  // namespace runner::train
