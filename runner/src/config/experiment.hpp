#pragma once
// Loading an experiment: YAML + extends + ${env:..} + --set overrides + shared-library plugins,
// validated against schemas/experiment.schema.json and each selected plugin's schema, with
// every default filled in. What this returns is exactly what runs (and is saved in the run dir).

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/experiment_options.hpp"
#include "config/extends.hpp"
#include "config/plugin_sections.hpp"
#include "config/schema_export.hpp"
#include "config/source_map.hpp"

namespace runner::config {

struct Experiment {
  nlohmann::json doc;  ///< resolved, validated, defaults filled (no `extends`)
  /// The core sections of `doc`, typed: read once, at load. Who changes a core key of `doc`
  /// later changes it here too; the plugin sections are only in `doc`.
  ExperimentOptions options;
  SourceMap marks;   ///< positions for later errors
  std::string path;  ///< the file given
  std::string dir;   ///< its folder (plugin libraries resolve against it)
  /// `dir` is a --config-dir: every relative path resolves against it, not against the file
  /// that set it (a resolved copy of an experiment saved elsewhere).
  bool dir_given = false;
  /// What loading did that the user should hear of: each plugin section an extending file, a
  /// --set or a sweep point switched to another plugin, with the base's keys it dropped
  /// (`runner config` and `run --dry-run` say them).
  std::vector<std::string> notes;
};

/// Loads and validates `path` with `overrides` ("a.b=c") applied after includes. Relative
/// paths inside resolve against `config_dir` when given (a resolved copy of an experiment saved
/// elsewhere, such as a sweep's SLURM point file), else against the file's folder. Throws
/// ConfigValidationError (all problems, each with file:line:col and key path) or ConfigError.
Experiment load_experiment(const std::string& path, const std::vector<std::string>& overrides = {},
                           const std::string& config_dir = "");

/// Validates `doc` (in place: plugin defaults and schema defaults are filled in).
void validate_experiment(nlohmann::json& doc, const SourceMap& marks);

/// Whether the user set the core key at `pointer` of the validated `doc`: written
/// (SourceMap::written) and, where the schema gives a default, other than it; a section when a
/// key below it is so. A printed or saved config spells every default out: it sets none by that.
bool user_set(const nlohmann::json& doc, const SourceMap& marks, const std::string& pointer);

}  // namespace runner::config
