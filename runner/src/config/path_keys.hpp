#pragma once
// Paths in a config mean what their writer meant: a relative path resolves against the folder
// of the file that wrote it (through `extends` chains), so the resolved config, and every run
// folder's config.yaml, holds absolute paths. And a path that is not there is a config error
// at the key's file:line, before anything runs.

#include <vector>

#include "config/config_issue.hpp"
#include "config/experiment.hpp"

namespace runner::config {

/// Rewrites each relative path key of e.doc (config::path_keys) to an absolute path: against
/// the folder of the file that set it, the working folder for a --set override, or e.dir for
/// every key when e.dir_given.
void resolve_relative_paths(Experiment& e);

/// One issue per path key whose file or folder does not exist, at the key's file:line; when
/// that line takes the value from ${env:VAR}, the issue names VAR and whether it is set.
/// `initial_weights` false: model.pretrained and model.init_from are not needed (a resume
/// continues from its own checkpoint) and are not looked for.
std::vector<ConfigIssue> missing_paths(const Experiment& e, bool initial_weights = true);

/// Throws ConfigValidationError (exit 2) when missing_paths(e, initial_weights) is not empty.
void require_paths_exist(const Experiment& e, bool initial_weights = true);

}  // namespace runner::config
