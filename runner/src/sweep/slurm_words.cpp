#include "sweep/slurm_words.hpp"

#include <filesystem>

#include "runner/error.hpp"
#include "util/child_process.hpp"

namespace runner::sweep {

std::string shell_quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string sbatch_escaped(const std::string& path) {
  std::string out;
  for (char c : path) out += c == '%' ? std::string("%%") : std::string(1, c);
  return out;
}

std::string one_line(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  std::string out;
  for (char c : text) out += c == '\n' ? std::string("; ") : std::string(1, c);
  return out;
}

std::string submit_to_sbatch(const std::vector<std::string>& argv, const std::string& what,
                             const std::string& script) {
  const util::CommandResult r = util::run_command(argv);
  if (r.exit_code == 127)
    throw Error(
        "runner sweep: sbatch is not installed here: run the sweep where SLURM's commands are "
        "(a login node), or use --executor local");
  std::string job = r.output.substr(0, r.output.find_first_of(";\n"));
  if (r.exit_code != 0 || job.empty() || job.find_first_not_of("0123456789") != std::string::npos)
    throw Error("runner sweep: sbatch refused " + what + ": " + one_line(r.output) +
                "; the script is " + script);
  return job;
}

std::string runner_program(const std::string& executable) {
  const std::filesystem::path front = std::filesystem::path(executable).parent_path() / "runner";
  return std::filesystem::exists(front) ? front.string() : executable;
}

}  // namespace runner::sweep
