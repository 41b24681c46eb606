#pragma once
// The names trackers give a record's values: TensorBoard's tags and MLflow's metric keys alike,
// so a run reads the same in both.

#include <string>

namespace runner::trackers {

/// The tag of value `key` of a record of `kind`: a log window's under train/ (its memory under
/// system/); an epoch's validation metric val_<m> as val/<m> (train.ema's ema_val_<m> as
/// ema_val/<m>), its training figures as train/epoch_loss, train/epoch_images_per_s,
/// train/epoch_seconds, its memory under system/; "" for none (the epoch number).
inline std::string metric_tag(const std::string& kind, const std::string& key) {
  if (kind == "step") return key == "peak_rss_mib" ? "system/peak_rss_mib" : "train/" + key;
  if (kind != "epoch") return "";
  if (key.rfind("val_", 0) == 0) return "val/" + key.substr(4);
  if (key.rfind("ema_val_", 0) == 0) return "ema_val/" + key.substr(8);
  if (key == "loss") return "train/epoch_loss";
  if (key == "images_per_s") return "train/epoch_images_per_s";
  if (key == "epoch_seconds") return "train/epoch_seconds";
  if (key == "peak_rss_mib" || key == "peak_gpu_mib") return "system/" + key;
  return "";
}

}  // namespace runner::trackers
