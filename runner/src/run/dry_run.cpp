#include "run/dry_run.hpp"

#include <spdlog/spdlog.h>

#include <fmt/format.h>

#include <optional>
#include <string>

#include "config/experiment_options.hpp"
#include "data/class_name.hpp"
#include "data/class_sampling.hpp"
#include "run/build_run_parts.hpp"
#include "run/preflight.hpp"
#include "run/run_trackers.hpp"
#include "run/start_checks.hpp"
#include "run/usable_sample.hpp"
#include "train/device_options.hpp"
#include "util/counted.hpp"
#include "util/some_of.hpp"

namespace runner::run {
namespace {

// A group's weight decay, where its options are a built-in optimizer's (else nullopt).
std::optional<double> group_weight_decay(const torch::optim::OptimizerOptions& o) {
  if (const auto* a = dynamic_cast<const torch::optim::AdamWOptions*>(&o)) return a->weight_decay();
  if (const auto* a = dynamic_cast<const torch::optim::AdamOptions*>(&o)) return a->weight_decay();
  if (const auto* s = dynamic_cast<const torch::optim::SGDOptions*>(&o)) return s->weight_decay();
  return std::nullopt;
}

// One line per parameter group: its tensors, parameters, weight decay and lr scale.
std::string parameter_groups_text(torch::optim::Optimizer& optimizer) {
  std::string text;
  const double first_lr = optim::first_group_lr(optimizer);
  for (const auto& group : optimizer.param_groups()) {
    int64_t numel = 0;
    for (const auto& p : group.params()) numel += p.numel();
    const auto decay = group_weight_decay(group.options());
    text +=
        fmt::format("\n  group         {}, {} parameters, weight decay {}, lr x {:.4g}",
                    util::counted(static_cast<int64_t>(group.params().size()), "tensor", "tensors"),
                    numel, decay ? fmt::format("{:g}", *decay) : std::string("?"),
                    first_lr > 0 ? group.options().get_lr() / first_lr : 1.0);
  }
  return text;
}

// How the training epoch draws its samples: the sampler, the epoch's size and, for the class
// samplers, each class's share of the draws.
std::string sampler_text(const config::DataOptions& data, const data::DatasetSplits& splits) {
  if (!splits.train) return "none (no training split)";
  const size_t epoch = data.samples_per_epoch.value_or(splits.train->size());
  const data::ShardLayout shards = data::shard_layout(*splits.train);
  if (data.sampler == "shuffle" && !shards.sizes.empty())
    return fmt::format(
        "shard by shard: {} shards shuffled per epoch, each rank reads its own{}, {} samples "
        "per epoch{}",
        shards.sizes.size(),
        shards.shuffle_buffer > 1
            ? fmt::format(" through a shuffle buffer of {}", shards.shuffle_buffer)
            : std::string(),
        epoch, data.samples_per_epoch ? " (data.samples_per_epoch)" : "");
  if (data.sampler == "shuffle")
    return fmt::format(
        "shuffle, a permutation of the training split per epoch, {} samples per "
        "epoch{}",
        epoch, data.samples_per_epoch ? " (data.samples_per_epoch)" : "");
  const auto weights = data::training_sampling_weights(data.sampler, data.sampler_weights, splits);
  std::vector<double> share(static_cast<size_t>(std::max<int64_t>(splits.num_classes, 0)), 0.0);
  for (size_t i = 0; i < weights->size(); ++i)
    share[static_cast<size_t>(splits.train->label(i))] += (*weights)[i];
  double total = 0;
  for (const double s : share) total += s;
  std::vector<std::string> shares;
  for (size_t c = 0; c < share.size(); ++c)
    shares.push_back(fmt::format("{} {:.3g}%",
                                 data::class_name(splits.class_names, static_cast<int64_t>(c)),
                                 100.0 * share[c] / total));
  return fmt::format("{}, {} draws per epoch with replacement; class shares {}", data.sampler,
                     epoch, util::some_of(shares, 12));
}

}  // namespace

void dry_run(const config::Experiment& e, const RunOptions& options, std::ostream& out) {
  check_devices(e);
  check_output_folder(e, options);
  check_model(e);  // a timm/<name> that timm has not: one line at model.backbone
  for (const auto& warning : check_trackers(e)) spdlog::warn("{}", warning);
  const config::ExperimentOptions& experiment = e.options;
  const config::LaunchOptions& launch = experiment.launch;
  const int world = config::world_processes(launch);
  const std::optional<int64_t>& bs = experiment.train.batch_size;
  const int64_t accum = experiment.train.grad_accum_steps;

  // Built as a CPU rank builds it (the step check below steps this model, then puts it back).
  PartsRequest request;
  request.channels_last =
      train::channels_last_as_run(experiment.train.channels_last_mode, torch::kCPU,
                                  train::precision_on_cpu(experiment.precision));
  const train::RunParts parts = build_run_parts(e, request);
  for (const auto& warning : check_run_starts(e, parts, options, world))
    spdlog::warn("{}", warning);
  const data::DatasetSplits& splits = parts.splits;
  const auto [params, trainable] = count_parameters(*parts.model);

  // One sample through the training transforms and the model: shapes that do not fit fail here.
  std::string sample_shape = "n/a";
  if (splits.train && splits.train->size() > 0) {
    auto [sample, index] = usable_sample(e, *splits.train, 0);
    parts.train_pipeline.apply(sample, experiment.seed, 0, index);
    sample_shape = std::to_string(sample.image.rows) + "x" + std::to_string(sample.image.cols) +
                   "x" + std::to_string(sample.image.channels());
  }

  // What loading switched (a plugin an extending file or a --set names anew), once it all fits.
  for (const std::string& note : e.notes) out << "note: " << note << "\n";
  auto size_of = [](const std::shared_ptr<data::Dataset>& d) {
    return d ? std::to_string(d->size()) : std::string("none");
  };
  out << "experiment      " << experiment.name << " (" << e.path << ")\n"
      << "world           " << util::counted(world, "process", "processes") << " = "
      << util::counted(launch.nnodes, "node", "nodes") << " x " << launch.num_processes
      << ", device " << launch.device << ", precision "
      << config::precision_name(experiment.precision) << "\n";
  if (bs) {
    out << "batch           " << *bs << " per process x "
        << util::counted(world, "process", "processes") << " x "
        << util::counted(accum, "accumulation step", "accumulation steps") << " = "
        << config::global_batch(*bs, world, accum) << " global\n";
  } else {
    out << "batch           auto (largest that fits, found at start) x "
        << util::counted(world, "process", "processes") << " x "
        << util::counted(accum, "accumulation step", "accumulation steps") << "\n";
  }
  out << "dataset         " << parts.about.dataset << ": train " << size_of(splits.train)
      << ", val " << size_of(splits.val) << ", test " << size_of(splits.test) << ", classes "
      << splits.num_classes << "\n"
      << "sampler         " << sampler_text(experiment.data, splits) << "\n"
      << "transforms      train " << parts.train_pipeline.size()
      << " (sample after them: " << sample_shape << "), eval " << parts.eval_pipeline.size() << "\n"
      << "model           " << parts.about.backbone << ": " << params << " parameters ("
      << trainable << " trainable"
      << (parts.frozen.empty()
              ? std::string()
              : ", " + std::to_string(parts.frozen.elements) + " frozen by model.freeze" +
                    (experiment.train.unfreeze_at_epoch
                         ? " for the first " +
                               util::counted(*experiment.train.unfreeze_at_epoch, "epoch", "epochs")
                         : std::string()))
      << ")\n"
      << "weights         "
      << (!parts.about.init_from.empty() ? "from a run (model.init_from), " + parts.about.init_from
          : parts.about.pretrained.empty() ? std::string("fresh initialisation")
                                           : "pretrained, " + parts.about.pretrained)
      << "\n"
      << "optimizer       " << parts.about.optimizer << ", lr "
      << optim::first_group_lr(parts.optimizer->torch_optimizer()) << ", scheduler "
      << parts.about.scheduler << parameter_groups_text(parts.optimizer->torch_optimizer()) << "\n"
      << "epochs          " << experiment.train.epochs << "\n"
      << "dry run: everything resolved; no training done\n";
}

}  // namespace runner::run
