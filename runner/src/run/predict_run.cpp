#include "run/predict_run.hpp"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "data/folder_dataset.hpp"
#include "dist/world.hpp"
#include "output/predictions_writer.hpp"
#include "train/batch_source.hpp"
#include "train/checkpoint.hpp"

namespace runner::run {

namespace fs = std::filesystem;

void predict_split(train::Evaluator& evaluator, const RankSetup& setup,
                   const train::RunParts& parts, const std::string& split,
                   const std::string& output, const std::string& format, const std::string& dir) {
  const bool main = setup.rank.world->is_main();
  const auto& dataset = split == "val" ? parts.splits.val : parts.splits.test;
  if (!dataset || dataset->size() == 0) {
    if (main) spdlog::warn("no {} split to predict: no predictions written", split);
    return;
  }
  const train::Predictions predicted = evaluator.predict(dataset);
  // Every rank learns whether the file was written: all end with the same line when it was not.
  dist::on_main_process(*setup.rank.world, [&] {
    const fs::path path =
        fs::path(output).is_absolute() ? fs::path(output) : fs::path(dir) / output;
    // Rows name the file and class where the dataset has them (image_folder, image_csv).
    output::SampleNames names;
    names.classes = parts.splits.class_names;
    names.multilabel = evaluator.multilabel();
    for (size_t i = 0; i < dataset->size(); ++i)
      names.files.push_back(data::sample_file(*dataset, i));
    const size_t rows =
        output::write_predictions(predicted.logits, format, dataset->describe(), path,
                                  predicted.indices, static_cast<int64_t>(dataset->size()), names);
    spdlog::info("wrote {} predictions of the {} split to {}", rows, split, path.string());
    if (rows < dataset->size())
      spdlog::warn(
          "data.on_bad_image skip: {} of the {} split's {} samples could not be read "
          "and have no row in {}{}",
          dataset->size() - rows, split, dataset->size(), path.string(),
          format == "kaggle" ? " (Kaggle scores a submission with every row only)" : "");
  });
}

namespace {

// The class names of the run whose weights predict: the dataset's, else the run folder's
// classes.txt beside checkpoints/ (the data is not read for a folder of images).
std::vector<std::string> class_names(const train::RunParts& parts, const RunOptions& options) {
  if (!parts.splits.class_names.empty()) return parts.splits.class_names;
  std::vector<std::string> names;
  if (options.checkpoint.empty()) return names;
  std::ifstream in(fs::absolute(options.checkpoint).parent_path().parent_path() / "classes.txt");
  for (std::string line; std::getline(in, line);) names.push_back(line);
  return names;
}

// --input FOLDER: every image file in it (not its subfolders), a row each, decoded as the model
// takes images; a file that cannot be read gets its row with the reason, and the run goes on.
void predict_folder(train::Evaluator& evaluator, const RankSetup& setup,
                    const train::RunParts& parts, const RunOptions& options,
                    const std::string& dir) {
  const int64_t channels =
      parts.about.model_options ? parts.about.model_options->in_chans : int64_t{3};
  const data::ImageFolderListing listing = data::list_image_folder(options.predict_input);
  const auto dataset = data::folder_dataset(listing, channels);
  const train::Predictions predicted = evaluator.predict(dataset, /*skip_bad_images=*/true);
  dist::on_main_process(*setup.rank.world, [&] {
    std::vector<std::string> files;
    for (size_t i = 0; i < dataset->size(); ++i) files.push_back(data::sample_file(*dataset, i));
    // Why each file without a row could not be read: its error, read again here (a few files).
    std::map<size_t, std::string> errors;
    std::vector<bool> has_row(files.size(), false);
    for (const int64_t i : predicted.indices) has_row[static_cast<size_t>(i)] = true;
    for (size_t i = 0; i < files.size(); ++i) {
      if (has_row[i]) continue;
      try {
        dataset->get(i);
        errors[i] = "could not be read";
      } catch (const std::exception& error) {
        errors[i] = error.what();
      }
    }
    const fs::path path =
        !options.predict_output.empty()
            ? fs::path(options.predict_output)
            : fs::path(dir) / (fs::path(options.predict_input).filename().string() + ".csv");
    output::write_file_predictions(predicted.logits, predicted.indices, files, errors,
                                   class_names(parts, options), path, evaluator.multilabel());
    spdlog::info("wrote {} predictions of the images in {} to {}", predicted.indices.size(),
                 options.predict_input, path.string());
    if (!errors.empty())
      spdlog::warn(
          "{} of the {} image files could not be read: their rows in {} say why in the "
          "error column (first: {})",
          errors.size(), files.size(), path.string(), files[errors.begin()->first]);
    if (!listing.ignored.empty())
      spdlog::warn("--input {}: ignored {} file(s) that are not images by their extension: {}",
                   options.predict_input, listing.ignored.size(),
                   data::listing_names(listing.ignored, 5));
    if (!listing.subfolders.empty())
      spdlog::warn(
          "--input {}: subfolders are not read: {} (give each as --input, or move "
          "their images up)",
          options.predict_input, data::listing_names(listing.subfolders, 5));
  });
}

}  // namespace

int predict_run(const RankSetup& setup, const config::ExperimentOptions& experiment,
                train::RunParts& parts, const RunOptions& options, const std::string& dir) {
  if (!options.checkpoint.empty()) {
    train::load_checkpoint(options.checkpoint, *parts.model, nullptr,
                           train::parse_checkpoint_weights(options.weights));
    if (setup.rank.world->is_main() && options.weights == "ema")
      spdlog::info("predicting with the averaged weights (train.ema) of {}", options.checkpoint);
  } else if (parts.about.pretrained.empty() && parts.about.init_from.empty() &&
             setup.rank.world->is_main()) {
    spdlog::warn(
        "predicting with freshly initialised weights: give --checkpoint, model.init_from or "
        "model.pretrained");
  }
  train::BatchSource batches(setup.rank, parts, experiment.data, experiment.seed);
  const int64_t batch_size =
      experiment.train.eval_batch_size.value_or(2 * *experiment.train.batch_size);
  train::Evaluator evaluator(setup.rank, parts, batches, batch_size,
                             experiment.train.log_every_steps, train::evaluation_views(experiment));
  if (!options.predict_input.empty()) {
    predict_folder(evaluator, setup, parts, options, dir);
    return 0;
  }
  const config::PredictOptions& predict = experiment.predict;
  predict_split(evaluator, setup, parts, predict.split,
                options.predict_output.empty() ? predict.output : options.predict_output,
                predict.format, dir);
  return 0;
}

}  // namespace runner::run
