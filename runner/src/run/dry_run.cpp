#include "run/dry_run.hpp"

#include "config/experiment_options.hpp"
#include "data/pipeline.hpp"
#include "run/build_parts.hpp"
#include "run/shape_checks.hpp"
#include "runner/registries.hpp"
#include "util/counted.hpp"

namespace runner::run {

void dry_run(const config::Experiment& e, std::ostream& out) {
  const auto& doc = e.doc;  // the plugin sections
  const config::ExperimentOptions experiment = config::read_experiment_options(doc);
  const config::LaunchOptions& launch = experiment.launch;
  const int world = launch.num_processes * launch.nnodes;
  const std::optional<int64_t>& bs = experiment.train.batch_size;
  const int64_t accum = experiment.train.grad_accum_steps;

  const auto splits = build_datasets(e);
  const auto train_tf =
      data::build_pipeline(doc.at("data").at("train_transforms"), registries().transforms);
  const auto eval_tf =
      data::build_pipeline(doc.at("data").at("eval_transforms"), registries().transforms);
  check_data_fits_model(e, splits, train_tf, eval_tf);
  auto model = build_model(doc.at("model"), e.dir);
  auto optimizer = build_optimizer(doc.at("optimizer"), *model);
  build_loss(doc.at("loss"));
  build_metrics(doc.at("metrics"));
  const auto [params, trainable] = count_parameters(*model);

  // One sample through the training transforms and the model: shapes that do not fit fail here.
  std::string sample_shape = "n/a";
  if (splits.train && splits.train->size() > 0) {
    auto sample = splits.train->get(0);
    train_tf.apply(sample, experiment.seed, 0, 0);
    sample_shape = std::to_string(sample.image.rows) + "x" + std::to_string(sample.image.cols) +
                   "x" + std::to_string(sample.image.channels());
  }

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
        << *bs * world * accum << " global\n";
  } else {
    out << "batch           auto (largest that fits, found at start) x "
        << util::counted(world, "process", "processes") << " x "
        << util::counted(accum, "accumulation step", "accumulation steps") << "\n";
  }
  out << "dataset         " << doc.at("data").at("dataset").at("name").get<std::string>()
      << ": train " << size_of(splits.train) << ", val " << size_of(splits.val) << ", test "
      << size_of(splits.test) << ", classes " << splits.num_classes << "\n"
      << "transforms      train " << train_tf.size() << " (sample after them: " << sample_shape
      << "), eval " << eval_tf.size() << "\n"
      << "model           " << doc.at("model").at("backbone").get<std::string>() << ": " << params
      << " parameters (" << trainable << " trainable)\n"
      << "weights         "
      << (doc.at("model").at("pretrained").is_string()
              ? "pretrained, " + doc.at("model").at("pretrained").get<std::string>()
              : std::string("fresh initialisation"))
      << "\n"
      << "optimizer       " << doc.at("optimizer").at("name").get<std::string>() << ", lr "
      << optim::first_group_lr(optimizer->torch_optimizer()) << ", scheduler "
      << doc.at("scheduler").at("name").get<std::string>() << "\n"
      << "epochs          " << experiment.train.epochs << "\n"
      << "dry run: everything resolved; no training done\n";
}

}  // namespace runner::run
