#include "builtins.hpp"
#include "metrics/common.hpp"

namespace runner {

void register_builtin_metrics(Registry<MetricFactory>& registry) {
  metrics::add_accuracy_metric(registry);
  metrics::add_top_k_metric(registry);
  metrics::add_macro_f1_metric(registry);
  metrics::add_loss_metric(registry);
  metrics::add_multilabel_metrics(registry);
}

}  // namespace runner
