#include "dist/world.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <thread>

#include <torch/cuda.h>
#include <torch/torch.h>

#include "dist/listen_socket.hpp"
#include "dist/shared_memory_all_reduce.hpp"
#include "dist/world_impl.hpp"
#include "runner/error.hpp"

namespace runner::dist {
namespace {

using Clock = std::chrono::steady_clock;

std::string endpoint_of(const launch::WorldEnv& env) {
  return env.master_addr + ":" + std::to_string(env.master_port);
}

std::string c10_message(const std::exception& e) {
  if (auto* c10 = dynamic_cast<const c10::Error*>(&e)) return c10->what_without_backtrace();
  return e.what();
}

std::vector<uint8_t> bytes(const std::string& text) { return {text.begin(), text.end()}; }
std::string text(const std::vector<uint8_t>& bytes) { return {bytes.begin(), bytes.end()}; }

// The local address this host would use to reach the master: Gloo must listen on an address
// the other nodes can reach, and the machine's hostname may not resolve to one (e.g. netns).
std::string local_address_towards(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0 || !found) {
    throw Error("cannot resolve the master address '" + host +
                "'; set MASTER_ADDR (launch.master_addr) to a reachable host name or IP");
  }
  std::string result = "127.0.0.1";
  int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  if (fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) == 0) {
    sockaddr_in local{};
    socklen_t length = sizeof(local);
    char buffer[INET_ADDRSTRLEN] = {0};
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0 &&
        ::inet_ntop(AF_INET, &local.sin_addr, buffer, sizeof(buffer)) != nullptr) {
      result = buffer;
    }
  }
  if (fd >= 0) ::close(fd);
  ::freeaddrinfo(found);
  return result;
}

std::shared_ptr<::gloo::transport::Device> gloo_device(const launch::WorldEnv& env) {
  if (const char* name = std::getenv("GLOO_SOCKET_IFNAME"); name && *name) {
    return c10d::ProcessGroupGloo::createDeviceForInterface(name);
  }
  return c10d::ProcessGroupGloo::createDeviceForHostname(
      local_address_towards(env.master_addr, env.master_port));
}

// c10d retries an unresolvable name until the timeout, printing a warning a second: say it now.
void check_master_resolves(const launch::WorldEnv& env) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int code = ::getaddrinfo(env.master_addr.c_str(), nullptr, &hints, &found);
  if (found) ::freeaddrinfo(found);
  if (code == 0) return;
  const std::string from =
      env.master_addr_source == "default" ? "" : " (from " + env.master_addr_source + ")";
  throw ConfigError("rank " + std::to_string(env.rank) + ": MASTER_ADDR '" + env.master_addr + "'" +
                    from + " does not resolve: " + ::gai_strerror(code) +
                    "; set MASTER_ADDR (launch.master_addr) to a host name or IP every node "
                    "resolves");
}

c10::intrusive_ptr<c10d::TCPStore> connect_store(const launch::WorldEnv& env,
                                                 std::chrono::milliseconds timeout) {
  check_master_resolves(env);
  const bool host = env.rank == 0 && env.agent_store_prefix.empty();
  try {
    if (!host)
      return compat::make_tcp_store(env.master_addr, env.master_port, false, env.world_size,
                                    timeout);
    const ListenSocket listener = listen_only_on(env.master_addr, env.master_port);
    return compat::make_tcp_store(env.master_addr, listener.port, true, env.world_size, timeout,
                                  listener.fd);
  } catch (const std::exception& e) {
    if (host) {
      throw cannot_host_rendezvous("rank 0", endpoint_of(env), e);
    }
    throw Error("rank " + std::to_string(env.rank) + " cannot reach the rendezvous at " +
                endpoint_of(env) + " within " + std::to_string(timeout.count() / 1000) +
                " s: " + c10_message(e) +
                " (is rank 0 running, and is MASTER_ADDR reachable from this node?)");
  }
}

// Every rank checks in; rank 0 publishes its world size so a disagreeing rank fails at once and
// tells the others through the store instead of leaving them to time out.
void rendezvous(c10d::Store& store, const launch::WorldEnv& env,
                std::chrono::milliseconds timeout) {
  const std::string where = " (rendezvous at " + endpoint_of(env) + ")";
  const std::string my_size = std::to_string(env.world_size);
  if (env.rank == 0) store.set("runner/world_size", bytes(my_size));
  store.set("runner/rank/" + std::to_string(env.rank), bytes(my_size));
  if (env.rank != 0) {
    std::string root_size = text(store.get("runner/world_size"));
    if (root_size != my_size) {
      std::string message = "rank " + std::to_string(env.rank) +
                            " was started with WORLD_SIZE=" + my_size +
                            " but rank 0 with WORLD_SIZE=" + root_size +
                            "; every rank must be started with the same world size" + where;
      store.set("runner/error", bytes(message));
      throw Error(message);
    }
  }
  store.add("runner/arrived", 1);
  const auto deadline = Clock::now() + timeout;
  while (true) {
    if (store.check({"runner/error"})) throw Error(text(store.get("runner/error")));
    int64_t arrived = store.add("runner/arrived", 0);
    if (arrived == env.world_size) break;
    if (arrived > env.world_size) {
      throw Error(std::to_string(arrived) + " processes joined a world of WORLD_SIZE=" + my_size +
                  "; two processes may share a RANK, or the world size is too small" + where);
    }
    if (Clock::now() > deadline) {
      std::string missing;
      for (int r = 0; r < env.world_size; ++r) {
        if (!store.check({"runner/rank/" + std::to_string(r)})) {
          missing += (missing.empty() ? "" : ", ") + std::to_string(r);
        }
      }
      throw Error("rank " + std::to_string(env.rank) + ": ranks [" + missing +
                  "] did not join within " + std::to_string(timeout.count() / 1000) +
                  " s of WORLD_SIZE=" + my_size +
                  "; were fewer processes started than the world size?" + where);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::string choose_backend(const std::string& requested) {
  if (requested == "gloo") return "gloo";
  if (requested == "nccl") {
    if (!compat::kHasNccl) {
      throw ConfigError("launch.backend 'nccl': this runner was built against libtorch " +
                        compat::torch_version() +
                        " without NCCL; use 'gloo' (CPU) or a CUDA build of runner");
    }
    if (!torch::cuda::is_available()) {
      throw ConfigError("launch.backend 'nccl' needs CUDA devices, and none are visible");
    }
    return "nccl";
  }
  if (requested == "auto") {
    return compat::kHasNccl && torch::cuda::is_available() ? "nccl" : "gloo";
  }
  throw ConfigError("launch.backend '" + requested + "' is not one of auto, gloo, nccl");
}

// -1 when gpu_ids has no entry for this local rank: an error only where a GPU is used.
int cuda_index_of(const launch::WorldEnv& env, const std::vector<int>& gpu_ids) {
  if (gpu_ids.empty()) return env.local_rank;
  if (env.local_rank >= static_cast<int>(gpu_ids.size())) return -1;
  return gpu_ids[env.local_rank];
}

bool needs_fp32_transport(const torch::Tensor& tensor) {
  return tensor.scalar_type() == torch::kBFloat16 || tensor.scalar_type() == torch::kHalf;
}

}  // namespace

Error cannot_host_rendezvous(const std::string& who, const std::string& endpoint,
                             const std::exception& cause) {
  return Error(who + " cannot host the rendezvous on " + endpoint + ": " + c10_message(cause) +
               " (is the port in use by another run? choose another launch.master_port / "
               "MASTER_PORT, or 0 with runner's own launcher)");
}

std::string gpu_ids_too_short(const launch::WorldEnv& env, const std::vector<int>& gpu_ids) {
  return "launch.gpu_ids lists " + std::to_string(gpu_ids.size()) + " GPU(s) for " +
         std::to_string(env.local_world_size) + " local ranks (rank " + std::to_string(env.rank) +
         " is local rank " + std::to_string(env.local_rank) + "); list one id per local rank";
}

World::World(launch::WorldEnv env, std::string backend, std::unique_ptr<Impl> impl, int cuda_index)
    : env_(std::move(env)),
      backend_(std::move(backend)),
      cuda_index_(cuda_index),
      impl_(std::move(impl)) {}

World::~World() = default;

std::shared_ptr<World> World::single() {
  return std::shared_ptr<World>(new World(launch::WorldEnv{}, "none", nullptr, 0));
}

std::shared_ptr<World> World::init(const WorldOptions& options) {
  auto env = launch::detect_world_env();
  return init(env ? *env : launch::WorldEnv{}, options);
}

std::shared_ptr<World> World::init(const launch::WorldEnv& env, const WorldOptions& options) {
  if (options.timeout_s <= 0) {
    throw ConfigError("launch.timeout_s must be positive (got " +
                      std::to_string(options.timeout_s) + ")");
  }
  std::string backend = choose_backend(options.backend);
  const int cuda_index = cuda_index_of(env, options.gpu_ids);
  if (backend == "nccl" && cuda_index < 0)
    throw ConfigError(gpu_ids_too_short(env, options.gpu_ids));
  if (env.world_size == 1)
    return std::shared_ptr<World>(new World(env, "none", nullptr, cuda_index));
  auto impl = std::make_unique<Impl>();
  impl->timeout = std::chrono::milliseconds(static_cast<int64_t>(options.timeout_s * 1000));
  impl->endpoint = endpoint_of(env);
  impl->store = connect_store(env, impl->timeout);
  if (!env.agent_store_prefix.empty()) {
    impl->store = c10::make_intrusive<c10d::PrefixStore>(env.agent_store_prefix, impl->store);
  }
  rendezvous(*impl->store, env, impl->timeout);
  auto prefixed = c10::make_intrusive<c10d::PrefixStore>("runner/pg", impl->store);
  try {
    if (backend == "nccl") {
      impl->group = compat::make_nccl_group(prefixed, env.rank, env.world_size, impl->timeout);
      auto host_prefixed = c10::make_intrusive<c10d::PrefixStore>("runner/pg-host", impl->store);
      impl->host_group = compat::make_gloo_group(host_prefixed, env.rank, env.world_size,
                                                 gloo_device(env), impl->timeout);
    } else {
      impl->group = compat::make_gloo_group(prefixed, env.rank, env.world_size, gloo_device(env),
                                            impl->timeout);
      impl->host_group = impl->group;
    }
  } catch (const c10::Error& e) {
    throw Error("rank " + std::to_string(env.rank) + ": creating the " + backend +
                " process group (rendezvous at " + impl->endpoint +
                ") failed: " + e.what_without_backtrace());
  }
  return std::shared_ptr<World>(new World(env, backend, std::move(impl), cuda_index));
}

torch::Device World::device() const {
  if (backend_ == "nccl") return torch::Device(torch::kCUDA, cuda_index_);
  return torch::Device(torch::kCPU);
}

void World::barrier() {
  if (!impl_) return;
  with_rank_context(*this, "barrier", [&] { impl_->group->barrier()->wait(); });
}

void World::main_process_first(const std::function<void()>& fn) {
  if (!is_main()) barrier();
  fn();
  if (is_main()) barrier();
}

// CPU ranks of one host that share a segment (DataParallel set it): small float32/float64
// all-reduces go through it, summed in rank order, instead of Gloo's sockets and threads.
bool World::all_reduce_in_shared_memory(torch::Tensor& tensor, ReduceOp op, const char* what) {
  auto* segment = impl_->shared_memory.get();
  if (segment == nullptr || !tensor.is_cpu() || !tensor.is_contiguous() ||
      (tensor.scalar_type() != torch::kFloat && tensor.scalar_type() != torch::kDouble))
    return false;
  const auto count = static_cast<size_t>(tensor.numel());
  const auto shared_op = op == ReduceOp::kMax   ? SharedMemoryAllReduce::Op::kMax
                         : op == ReduceOp::kMin ? SharedMemoryAllReduce::Op::kMin
                                                : SharedMemoryAllReduce::Op::kSum;
  if (tensor.scalar_type() == torch::kFloat)
    segment->all_reduce(tensor.data_ptr<float>(), count, shared_op, what);
  else
    segment->all_reduce(tensor.data_ptr<double>(), count, shared_op, what);
  if (op == ReduceOp::kAvg) tensor.div_(env_.world_size);
  return true;
}

void World::all_reduce_(torch::Tensor& tensor, ReduceOp op) {
  if (!impl_) return;
  torch::NoGradGuard no_grad;
  if (all_reduce_in_shared_memory(tensor, op, "an all-reduce")) return;
  const bool widen = needs_fp32_transport(tensor) && backend_ == "gloo";
  std::vector<torch::Tensor> buffer = {widen ? tensor.to(torch::kFloat)
                                             : tensor.to(device()).contiguous()};
  c10d::AllreduceOptions options;
  options.reduceOp = op == ReduceOp::kMax   ? c10d::ReduceOp::MAX
                     : op == ReduceOp::kMin ? c10d::ReduceOp::MIN
                                            : c10d::ReduceOp::SUM;
  with_rank_context(*this, "all_reduce", [&] { impl_->group->allreduce(buffer, options)->wait(); });
  if (op == ReduceOp::kAvg) {
    if (!buffer[0].is_floating_point()) {
      throw Error("all_reduce average needs a floating-point tensor (got " +
                  std::string(c10::toString(buffer[0].scalar_type())) + ")");
    }
    buffer[0].div_(env_.world_size);
  }
  if (!buffer[0].is_same(tensor)) tensor.copy_(buffer[0]);
}

double World::all_reduce(double value, ReduceOp op) {
  if (!impl_) return value;
  auto tensor = torch::full({1}, value, torch::TensorOptions().dtype(torch::kDouble));
  all_reduce_(tensor, op);
  return tensor.item<double>();
}

void World::all_reduce_on_host_(torch::Tensor& tensor, ReduceOp op) {
  if (!impl_) return;
  if (!tensor.is_cpu() || !tensor.is_contiguous() || op == ReduceOp::kAvg)
    throw Error("internal: all_reduce_on_host_ takes a contiguous CPU tensor and sum/max/min");
  if (all_reduce_in_shared_memory(tensor, op,
                                  "a host all-reduce (the step's flags, a failure's message)"))
    return;
  std::vector<torch::Tensor> buffer = {tensor};
  c10d::AllreduceOptions options;
  options.reduceOp = op == ReduceOp::kMax   ? c10d::ReduceOp::MAX
                     : op == ReduceOp::kMin ? c10d::ReduceOp::MIN
                                            : c10d::ReduceOp::SUM;
  with_rank_context(*this, "all_reduce (host)",
                    [&] { impl_->host_group->allreduce(buffer, options)->wait(); });
}

torch::Tensor World::all_gather(const torch::Tensor& tensor) {
  if (!impl_) return tensor.unsqueeze(0).clone();
  torch::NoGradGuard no_grad;
  // Gloo moves only numeric types it knows: bool travels as uint8, bf16/fp16 as fp32.
  torch::Tensor send = tensor.detach();
  if (send.scalar_type() == torch::kBool) {
    send = send.to(torch::kUInt8);
  } else if (needs_fp32_transport(send) && backend_ == "gloo") {
    send = send.to(torch::kFloat);
  }
  send = send.to(device()).contiguous();
  std::vector<torch::Tensor> inputs = {send};
  std::vector<std::vector<torch::Tensor>> outputs(1);
  for (int r = 0; r < env_.world_size; ++r) outputs[0].push_back(torch::empty_like(send));
  with_rank_context(*this, "all_gather", [&] { impl_->group->allgather(outputs, inputs)->wait(); });
  return torch::stack(outputs[0]).to(tensor.scalar_type());
}

void World::broadcast_(std::vector<torch::Tensor>& tensors, int root) {
  if (!impl_ || tensors.empty()) return;
  torch::NoGradGuard no_grad;
  c10d::BroadcastOptions options;
  options.rootRank = root;
  for (auto& tensor : tensors) {
    std::vector<torch::Tensor> one = {tensor};
    with_rank_context(*this, "broadcast", [&] { impl_->group->broadcast(one, options)->wait(); });
  }
}

void World::broadcast_module(torch::nn::Module& module) {
  if (!impl_) return;
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> tensors;
  for (auto& p : module.parameters()) tensors.push_back(p);
  for (auto& b : module.buffers()) tensors.push_back(b);
  if (tensors.empty()) return;
  // 250 MB buckets, as PyTorch DDP's initial module sync.
  with_rank_context(*this, "broadcast of the model's parameters and buffers", [&] {
    c10d::broadcast_coalesced(impl_->group, tensors, 250u * 1024u * 1024u, 0);
  });
  // Written by the backend: their versions move as an in-place op's would (a kept bf16 compute
  // copy of a weight is written again from the weight when its version moved).
  for (auto& t : tensors) t.unsafeGetTensorImpl()->bump_version();
}

torch::Tensor interleave_gathered(const torch::Tensor& gathered, const torch::Tensor& valid) {
  // [W, B, ...] -> [B, W, ...] -> [B*W, ...]: sampler position order.
  auto rows = gathered.transpose(0, 1).contiguous().flatten(0, 1);
  auto keep = valid.to(torch::kBool).transpose(0, 1).contiguous().flatten();
  return rows.index({keep});
}

std::string broadcast_text(World& world, const std::string& text) {
  if (!world.distributed()) return text;
  // The length first, then the bytes (as uint8 on the world's device).
  constexpr int64_t kMax = 64 * 1024;
  if (world.is_main() && static_cast<int64_t>(text.size()) > kMax)
    throw Error("internal: a text of " + std::to_string(text.size()) + " bytes to broadcast");
  std::vector<torch::Tensor> length = {
      torch::tensor({world.is_main() ? static_cast<int64_t>(text.size()) : int64_t{0}})
          .to(world.device())};
  world.broadcast_(length, 0);
  const int64_t size = length[0].cpu().item<int64_t>();
  if (size == 0) return "";
  torch::Tensor bytes = torch::zeros({size}, torch::kUInt8);
  if (world.is_main()) std::memcpy(bytes.data_ptr(), text.data(), static_cast<size_t>(size));
  std::vector<torch::Tensor> buffer = {bytes.to(world.device())};
  world.broadcast_(buffer, 0);
  const torch::Tensor received = buffer[0].cpu().contiguous();
  return std::string(static_cast<const char*>(received.data_ptr()), static_cast<size_t>(size));
}

void on_main_process(World& world, const std::function<void()>& io) {
  std::string failure;  // "<exit code> <message>"
  if (world.is_main()) {
    try {
      io();
    } catch (const Error& e) {
      failure = std::to_string(e.exit_code()) + " " + e.what();
    } catch (const std::exception& e) {
      failure = std::to_string(kExitFailure) + " " + e.what();
    }
  }
  failure = broadcast_text(world, failure);
  if (failure.empty()) return;
  const size_t space = failure.find(' ');
  throw Error(failure.substr(space + 1), std::stoi(failure.substr(0, space)));
}

torch::Tensor gather_for_metrics(World& world, const torch::Tensor& values,
                                 const torch::Tensor& valid) {
  if (values.dim() < 1 || valid.dim() != 1 || valid.size(0) != values.size(0)) {
    throw Error("gather_for_metrics: values must be [B, ...] and valid [B] (got " +
                std::to_string(values.dim()) + "-d values, valid of " +
                std::to_string(valid.dim()) + " dims)");
  }
  if (!world.distributed()) return values.index({valid.to(torch::kBool)});
  // Ranks may hold different batch sizes (a last, short batch): pad to the largest as invalid.
  auto sizes = world.all_gather(torch::tensor({values.size(0)}, torch::kLong));
  const int64_t largest = sizes.max().item<int64_t>();
  torch::Tensor padded = values;
  torch::Tensor padded_valid = valid.to(torch::kBool);
  if (values.size(0) < largest) {
    auto shape = values.sizes().vec();
    shape[0] = largest - values.size(0);
    padded = torch::cat({values, torch::zeros(shape, values.options())});
    padded_valid = torch::cat({padded_valid, torch::zeros({shape[0]}, padded_valid.options())});
  }
  auto gathered = world.all_gather(padded);
  auto gathered_valid = world.all_gather(padded_valid);
  return interleave_gathered(gathered, gathered_valid).to(values.device());
}

}  // namespace runner::dist
