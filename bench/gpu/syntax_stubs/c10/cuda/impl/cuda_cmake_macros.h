#pragma once
// For the syntax-only check: Debian's CPU libtorch ships c10/cuda headers without this
// configure-time file. CUDA libtorch generates it with these contents.
#define C10_CUDA_BUILD_SHARED_LIBS
