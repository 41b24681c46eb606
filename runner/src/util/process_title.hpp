#pragma once
// What `ps` and `top` show for this process. Every rank runs the same command line, so without a
// title a user has to read /proc/PID/environ to tell rank 1 from rank 0.

#include <string>

namespace runner::util {

/// Remembers main's argv: its memory holds the command line `ps` shows. Call first in main.
void remember_command_line(int argc, char** argv);

/// Shows `title` as the command line (`ps -o args`, argv rewritten in place, cut to the room
/// the original arguments had) and `name` as the process name (`ps -o comm`, top; 15 bytes at
/// most, and no spaces: tools that parse /proc/PID/stat split on them, SLURM's proctrack/linuxproc
/// among them, which then cannot find the process to kill). Only after the arguments were copied:
/// argv's text is overwritten.
void set_process_title(const std::string& title, const std::string& name);

}  // namespace runner::util
