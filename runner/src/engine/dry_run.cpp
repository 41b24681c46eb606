#include "engine/dry_run.hpp"

#include "engine/build_parts.hpp"
#include "engine/shape_checks.hpp"
#include "runner/data/pipeline.hpp"
#include "runner/registries.hpp"

namespace runner::engine {

void dry_run(const config::Experiment& e, std::ostream& out) {
  const auto& doc = e.doc;
  const auto& launch = doc.at("launch");
  const int world = launch.at("num_processes").get<int>() * launch.at("nnodes").get<int>();
  const auto& train = doc.at("train");
  const auto& bs = train.at("batch_size");
  const int accum = train.at("grad_accum_steps").get<int>();

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
    train_tf.apply(sample, doc.at("seed").get<uint64_t>(), 0, 0);
    sample_shape = std::to_string(sample.image.rows) + "x" + std::to_string(sample.image.cols) +
                   "x" + std::to_string(sample.image.channels());
  }

  auto size_of = [](const std::shared_ptr<data::Dataset>& d) {
    return d ? std::to_string(d->size()) : std::string("none");
  };
  out << "experiment      " << doc.at("name").get<std::string>() << " (" << e.path << ")\n"
      << "world           " << world << " process(es) = " << launch.at("nnodes").get<int>()
      << " node(s) x " << launch.at("num_processes").get<int>() << ", device "
      << launch.at("device").get<std::string>() << ", precision "
      << doc.at("precision").get<std::string>() << "\n";
  if (bs.is_number_integer()) {
    out << "batch           " << bs.get<int>() << " per process x " << world << " process(es) x "
        << accum << " accumulation = " << bs.get<int>() * world * accum << " global\n";
  } else {
    out << "batch           auto (largest that fits, found at start) x " << world
        << " process(es) x " << accum << " accumulation\n";
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
      << doc.at("optimizer").value("lr", 0.0) << ", scheduler "
      << doc.at("scheduler").at("name").get<std::string>() << "\n"
      << "epochs          " << train.at("epochs").get<int>() << "\n"
      << "dry run: everything resolved; no training done\n";
}

}  // namespace runner::engine
