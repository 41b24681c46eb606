#pragma once
// One rank's failure, made every rank's: a batch one rank cannot load (an unreadable image)
// must end the run on every rank after the same step, with the same one line (naming the file)
// in every rank's log and in the main process's summary.json.

#include <string>

namespace runner::dist {
class World;
}

namespace runner::train {

/// A collective: every rank passes its own failure ("" when it has none) and gets the lowest
/// failing rank's ("rank 1: cannot use F: ..." in a world of several), or "" when no rank
/// failed. Messages are cut at 1000 bytes.
std::string agree_on_failure(dist::World& world, const std::string& mine);

}  // namespace runner::train
