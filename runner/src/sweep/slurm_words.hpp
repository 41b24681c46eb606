#pragma once
// What the SLURM executors (points as an array, Optuna's workers) write into scripts and sbatch
// command lines, and how they read the tools' answers. Torch-free.

#include <string>
#include <vector>

namespace runner::sweep {

/// `text` as one bash word in single quotes.
std::string shell_quoted(const std::string& text);
/// A path for sbatch --output, which reads "%" as a pattern: a literal one is "%%".
std::string sbatch_escaped(const std::string& path);
/// Several lines of a tool's output as one: "a; b".
std::string one_line(std::string text);
/// Runs `argv` (an sbatch --parsable command line ending in `script`) and returns the job id;
/// throws Error with sbatch's words (`what`: "the array (--array=...)", "the workers"), or
/// saying where SLURM's commands are when sbatch is not installed here.
std::string submit_to_sbatch(const std::vector<std::string>& argv, const std::string& what,
                             const std::string& script);
/// The program the tasks run: the front program beside runner-engine (it sets libgomp's
/// environment before libtorch loads), else `executable`.
std::string runner_program(const std::string& executable);

}  // namespace runner::sweep
