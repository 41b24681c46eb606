#pragma once
// The one place that knows libtorch's distributed and autocast internals. The supported line is
// the PyTorch wheel's 2.11 (requirements.txt); where 2.x spellings changed between minor
// releases (the c10d::Reducer constructor), the spelling is picked by what the installed headers
// accept (std::is_constructible), so a user building against another 2.x still compiles.
// Code elsewhere calls these functions and never tests TORCH_VERSION_*.

#include <chrono>
#include <memory>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include <ATen/autocast_mode.h>
#include <torch/version.h>

// Every Linux libtorch is built with Gloo, but its CMake config does not say so; the c10d Gloo
// header is empty without this.
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO
#endif
// NCCL only where the build asked for it (CUDA libtorch) and nccl.h is on the include path.
#if (defined(USE_C10D_NCCL) || defined(RUNNER_WITH_NCCL)) && __has_include(<nccl.h>)
#ifndef USE_C10D_NCCL
#define USE_C10D_NCCL
#endif
#define RUNNER_COMPAT_HAS_NCCL 1
#else
#define RUNNER_COMPAT_HAS_NCCL 0
#endif

// CUDA-only headers (the caching allocator's statistics) where the build links CUDA libtorch.
#if defined(RUNNER_WITH_CUDA) && __has_include(<c10/cuda/CUDACachingAllocator.h>) && \
    __has_include(<cuda_runtime_api.h>)
#include <ATen/ATen.h>
#include <c10/cuda/CUDACachingAllocator.h>
#define RUNNER_COMPAT_HAS_CUDA 1
#else
#define RUNNER_COMPAT_HAS_CUDA 0
#endif
#include <ATen/Context.h>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/csrc/distributed/c10d/comm.hpp>
#include <torch/csrc/distributed/c10d/logger.hpp>
#include <torch/csrc/distributed/c10d/reducer.hpp>
#if RUNNER_COMPAT_HAS_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace runner::compat {

using ProcessGroupPtr = c10::intrusive_ptr<c10d::ProcessGroup>;
using StorePtr = c10::intrusive_ptr<c10d::Store>;

/// True when this build can create NCCL process groups.
constexpr bool kHasNccl = RUNNER_COMPAT_HAS_NCCL != 0;
/// True when this build links CUDA libtorch (device memory statistics are available).
constexpr bool kHasCuda = RUNNER_COMPAT_HAS_CUDA != 0;

/// libtorch's version as "major.minor".
inline std::string torch_version() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR);
}

/// A TCPStore client (or, with is_server, the store host) for the rendezvous.
inline c10::intrusive_ptr<c10d::TCPStore> make_tcp_store(const std::string& host, int port,
                                                         bool is_server, int num_workers,
                                                         std::chrono::milliseconds timeout,
                                                         int listen_fd = -1) {
  c10d::TCPStoreOptions options;
  // A server on a socket the caller bound (dist/listen_socket.hpp), not on every interface.
  if (is_server && listen_fd >= 0) options.masterListenFd = listen_fd;  // port: the one it bound
  options.port = static_cast<std::uint16_t>(port);
  options.isServer = is_server;
  options.numWorkers = num_workers;
  options.waitWorkers = false;  // runner's own rendezvous waits, so it can name missing ranks
  options.timeout = timeout;
  return c10::make_intrusive<c10d::TCPStore>(host, options);
}

namespace detail {
template <typename T, typename = void>
struct HasSetDefaultBackend : std::false_type {};
template <typename T>
struct HasSetDefaultBackend<T, std::void_t<decltype(std::declval<T&>().setDefaultBackend(
                                   std::declval<typename T::BackendType>()))>> : std::true_type {};

// In 2.x a backend (Gloo, NCCL) is a c10d::Backend; collectives go through a ProcessGroup
// that routes each device type to its backend.
template <typename PG = c10d::ProcessGroup>
ProcessGroupPtr wrap_backend(const StorePtr& store, int rank, int size,
                             c10::intrusive_ptr<c10d::Backend> backend,
                             typename PG::BackendType type, c10::DeviceType device,
                             const std::string& name, std::chrono::milliseconds timeout) {
  c10::intrusive_ptr<PG> group;
  if constexpr (std::is_constructible_v<PG, const StorePtr&, int, int>) {
    group = c10::make_intrusive<PG>(store, rank, size);
  } else {
    group = c10::make_intrusive<PG>(store, rank, size,
                                    c10::make_intrusive<typename PG::Options>(name, timeout));
  }
  if constexpr (HasSetDefaultBackend<PG>::value) group->setDefaultBackend(type);
  group->setBackend(device, type, backend);
  return group;
}
}  // namespace detail

/// A Gloo process group over `store` using `device` for transport.
inline ProcessGroupPtr make_gloo_group(const StorePtr& store, int rank, int size,
                                       std::shared_ptr<::gloo::transport::Device> device,
                                       std::chrono::milliseconds timeout) {
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  options->devices.push_back(std::move(device));
  auto gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, options);
  return detail::wrap_backend(store, rank, size, gloo, c10d::ProcessGroup::BackendType::GLOO,
                              c10::DeviceType::CPU, "gloo", timeout);
}

/// An NCCL process group (CUDA tensors); throws when this build has no NCCL.
inline ProcessGroupPtr make_nccl_group(const StorePtr& store, int rank, int size,
                                       std::chrono::milliseconds timeout) {
#if RUNNER_COMPAT_HAS_NCCL
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = timeout;
  auto nccl = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size, options);
  return detail::wrap_backend(store, rank, size, nccl, c10d::ProcessGroup::BackendType::NCCL,
                              c10::DeviceType::CUDA, "nccl", timeout);
#else
  (void)store, (void)rank, (void)size, (void)timeout;
  TORCH_CHECK(false, "this libtorch build has no NCCL");
#endif
}

/// PyTorch DDP's reducer over `params`, buckets as compute_bucket_assignment_by_size gave them.
/// The argument list changed across 2.x (per_bucket_size_limits dropped, flags added); the
/// candidate spellings are tried in order against the installed header.
template <typename R = c10d::Reducer>
std::unique_ptr<R> make_reducer(std::vector<at::Tensor> params,
                                std::vector<std::vector<size_t>> bucket_indices,
                                std::vector<size_t> per_bucket_size_limits, ProcessGroupPtr group,
                                int64_t bucket_bytes_cap, bool find_unused_parameters,
                                bool gradient_as_bucket_view, int64_t first_bucket_bytes_cap) {
  using Params = std::vector<at::Tensor>;
  using Buckets = std::vector<std::vector<size_t>>;
  using Limits = std::vector<size_t>;
  using Sparse = std::vector<bool>;
  using Names = std::unordered_map<size_t, std::string>;
  Sparse sparse(params.size(), false);
  Names names;
  if constexpr (std::is_constructible_v<R, Params, Buckets, Limits, ProcessGroupPtr, Sparse,
                                        int64_t, bool, bool, Names, int64_t>) {
    return std::make_unique<R>(std::move(params), std::move(bucket_indices),
                               std::move(per_bucket_size_limits), std::move(group),
                               std::move(sparse), bucket_bytes_cap, find_unused_parameters,
                               gradient_as_bucket_view, std::move(names), first_bucket_bytes_cap);
  } else if constexpr (std::is_constructible_v<R, Params, Buckets, Limits, ProcessGroupPtr, Sparse,
                                               int64_t, bool, bool, Names, int64_t, bool>) {
    return std::make_unique<R>(
        std::move(params), std::move(bucket_indices), std::move(per_bucket_size_limits),
        std::move(group), std::move(sparse), bucket_bytes_cap, find_unused_parameters,
        gradient_as_bucket_view, std::move(names), first_bucket_bytes_cap, false);
  } else if constexpr (std::is_constructible_v<R, Params, Buckets, ProcessGroupPtr, Sparse, int64_t,
                                               bool, bool, Names, int64_t>) {
    (void)per_bucket_size_limits;
    return std::make_unique<R>(std::move(params), std::move(bucket_indices), std::move(group),
                               std::move(sparse), bucket_bytes_cap, find_unused_parameters,
                               gradient_as_bucket_view, std::move(names), first_bucket_bytes_cap);
  } else if constexpr (std::is_constructible_v<R, Params, Buckets, ProcessGroupPtr, Sparse, int64_t,
                                               bool, bool, Names, int64_t, bool>) {
    (void)per_bucket_size_limits;
    return std::make_unique<R>(std::move(params), std::move(bucket_indices), std::move(group),
                               std::move(sparse), bucket_bytes_cap, find_unused_parameters,
                               gradient_as_bucket_view, std::move(names), first_bucket_bytes_cap,
                               /*skip_all_reduce_unused_params=*/false);
  } else if constexpr (std::is_constructible_v<R, Params, Buckets, ProcessGroupPtr, Sparse, int64_t,
                                               bool, bool, Names, int64_t, bool, bool>) {
    (void)per_bucket_size_limits;
    return std::make_unique<R>(std::move(params), std::move(bucket_indices), std::move(group),
                               std::move(sparse), bucket_bytes_cap, find_unused_parameters,
                               gradient_as_bucket_view, std::move(names), first_bucket_bytes_cap,
                               /*skip_all_reduce_unused_params=*/false,
                               /*use_python_reducer=*/false);
  } else if constexpr (std::is_constructible_v<R, Params, Buckets, ProcessGroupPtr, Sparse, int64_t,
                                               bool, bool, Names, int64_t, bool, bool,
                                               std::vector<int64_t>>) {
    (void)per_bucket_size_limits;
    return std::make_unique<R>(std::move(params), std::move(bucket_indices), std::move(group),
                               std::move(sparse), bucket_bytes_cap, find_unused_parameters,
                               gradient_as_bucket_view, std::move(names), first_bucket_bytes_cap,
                               false, false, std::vector<int64_t>{});
  } else if constexpr (std::is_constructible_v<R, Params, Buckets, ProcessGroupPtr, Sparse, int64_t,
                                               bool, bool, Names, int64_t, bool, bool,
                                               std::vector<int64_t>, bool>) {
    // Newest spelling (bucket_bytes_cap_list, batched_grad_copy); empty list: use bucket_bytes_cap.
    (void)per_bucket_size_limits;
    return std::make_unique<R>(std::move(params), std::move(bucket_indices), std::move(group),
                               std::move(sparse), bucket_bytes_cap, find_unused_parameters,
                               gradient_as_bucket_view, std::move(names), first_bucket_bytes_cap,
                               false, false, std::vector<int64_t>{}, /*batched_grad_copy=*/false);
  } else {
    static_assert(sizeof(R) == 0, "runner: unknown c10d::Reducer constructor; extend compat");
    return nullptr;
  }
}

/// Turns autocast on or off for one device type (kCPU or kCUDA) with the given low dtype.
inline void set_autocast(c10::DeviceType device_type, at::ScalarType dtype, bool enabled) {
  at::autocast::set_autocast_dtype(device_type, dtype);
  at::autocast::set_autocast_enabled(device_type, enabled);
  // Cast weights are cached while autocast is on; drop them so a later region recasts.
  if (!enabled) at::autocast::clear_cache();
}

namespace detail {
/// The caching allocator's statistics calls throw "Invalid device argument" until CUDA is
/// initialised (lazily, by the first CUDA tensor): make one.
inline void ensure_cuda_initialised(const c10::Device& device) {
  (void)at::empty({1}, at::TensorOptions().device(device).dtype(at::kByte));
}
}  // namespace detail

/// Peak bytes the CUDA caching allocator has handed out on `device` since the last reset;
/// 0 for a CPU device or a build without CUDA.
inline int64_t cuda_peak_allocated_bytes(const c10::Device& device) {
#if RUNNER_COMPAT_HAS_CUDA
  if (!device.is_cuda()) return 0;
  detail::ensure_cuda_initialised(device);
  const auto index = device.has_index() ? device.index() : c10::DeviceIndex{0};
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(index);
  return stats.allocated_bytes[0].peak;  // [0]: StatType::AGGREGATE (all pools), in 1.x and 2.x
#else
  (void)device;
  return 0;
#endif
}

/// The GPU's total memory in bytes; 0 on CPU or without CUDA.
inline int64_t cuda_total_bytes(const c10::Device& device) {
#if RUNNER_COMPAT_HAS_CUDA
  if (!device.is_cuda()) return 0;
  detail::ensure_cuda_initialised(device);
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) return 0;
  return static_cast<int64_t>(total_bytes);
#else
  (void)device;
  return 0;
#endif
}

/// Starts a new peak for cuda_peak_allocated_bytes; no effect on CPU or without CUDA.
inline void cuda_reset_peak_bytes(const c10::Device& device) {
#if RUNNER_COMPAT_HAS_CUDA
  if (!device.is_cuda()) return;
  detail::ensure_cuda_initialised(device);
  c10::cuda::CUDACachingAllocator::resetPeakStats(device.has_index() ? device.index()
                                                                     : c10::DeviceIndex{0});
#else
  (void)device;
#endif
}

/// cuDNN autotuning: picks the fastest convolution algorithm per input shape (fixed shapes gain).
inline void set_cudnn_benchmark(bool enabled) { at::globalContext().setBenchmarkCuDNN(enabled); }

}  // namespace runner::compat
