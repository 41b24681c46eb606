// Owner of the precompiled <torch/torch.h> that runner's executables share (runner/CMakeLists.txt:
// runner_executable_pch). Built only as their dependency; never run.
int main() { return 0; }
