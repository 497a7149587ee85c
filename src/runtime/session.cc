#include "runtime/session.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <string_view>
#include <unordered_map>

#include "core/error.h"
#include "ep/cpu/cpu_provider.h"
#include "onnx/model_loader.h"
#include "runtime/constant_folding.h"
#include "runtime/execution_frame.h"
#include "runtime/fusion.h"
#include "runtime/io_binding.h"

namespace onnxllm {

struct Session::Plan {
  struct Step {
    const Node* node = nullptr;  // nullptr: a copy step
    std::unique_ptr<OpKernel> kernel;
    std::vector<std::unique_ptr<Plan>> branches;  // If: then, else
    // The values the step reads and writes: the node's, or their copies in the step's memory;
    // -1 for an absent one. A copy step copies inputs[0] into outputs[0] with provider->copy().
    std::vector<int> inputs, outputs;
    std::vector<int> implicit_inputs;  // If: the outer values its branches read (host copies)
    std::vector<int> free_after;       // values whose last reader is this step
    const ExecutionProvider* provider = nullptr;
    int copy_of = -1;                       // a copy step: the graph value it copies (for messages)
    Allocator* device_allocator = nullptr;  // the provider's, when it is not host memory
    InferDeps deps;  // the kernel's, read once
  };
  const Graph* graph = nullptr;
  std::vector<Step> steps;
  // By value id: the graph's values, then the copies the plan adds at partition boundaries.
  std::vector<TensorView> initial_values;          // initializer views (device copies for device readers)
  std::vector<const ExecutionProvider*> device_of;  // provider whose device memory holds the value; nullptr: host
  std::vector<Tensor> device_constants;            // initializers copied to a device at creation
  std::vector<std::pair<int, int>> outer_map;     // (value id here, value id in the parent plan)
  std::vector<int> output_slot;  // value id -> graph output index (root plan; a root If's branches), -1
  size_t max_arity = 0;
  int copies = 0;  // copy steps
};

namespace {

[[noreturn]] void rethrow_with_label(const Node& node, const Error& e) {
  const std::string label = node.label();
  const std::string what = e.what();
  if (what.rfind(label, 0) == 0) throw e;
  throw Error(e.code(), str_cat(label, ": ", what));
}

void release(FrameLevel& level, MemoryPlan& memory, int v) {
  const int r = level.root[v];
  if (r < 0) return;
  level.root[v] = -1;
  if (--level.refs[r] == 0) {
    if (Allocator* a = level.device_allocator[r]) {
      a->free(level.block[r]);
      level.device_allocator[r] = nullptr;
      --level.device_blocks;
    } else {
      memory.free(level.block[r]);
    }
    level.block[r] = nullptr;
  }
}

std::string op_name(const Node& node) { return node.domain.empty() ? node.op_type : node.domain + "." + node.op_type; }

// Values larger than this are not kept in an inference key: such steps infer every run.
constexpr size_t kMaxKeyValueBytes = size_t{64} << 10;

// The key under which a reusable step's inference is kept: each input's dtype and shape, and the
// values its infer() reads. False when such a value is too large to keep.
bool inference_key(std::span<const TensorView> inputs, uint32_t value_inputs, std::vector<int64_t>& key) {
  key.clear();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorView& t = inputs[i];
    if (t.empty()) {
      key.push_back(-1);
      continue;
    }
    key.push_back(static_cast<int64_t>(t.dtype()));
    key.push_back(t.rank());
    for (int64_t d : t.shape()) key.push_back(d);
    if (i >= 32 || !(value_inputs >> i & 1u)) continue;
    const size_t bytes = t.bytes();
    if (bytes > kMaxKeyValueBytes || !t.on_host()) return false;
    const size_t at = key.size();
    key.resize(at + (bytes + 7) / 8, 0);
    if (bytes) std::memcpy(key.data() + at, t.raw(), bytes);
  }
  return true;
}

bool same_specs(std::span<const OutputSpec> a, std::span<const OutputSpec> b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].dtype != b[i].dtype || a[i].shape != b[i].shape || a[i].alias_input != b[i].alias_input) return false;
  return true;
}

IoInfo io_info(const Value& v) {
  IoInfo info;
  info.name = v.name;
  info.dtype = v.dtype;
  if (v.dims) info.dims = *v.dims;
  info.dim_names = v.dim_names;
  return info;
}

}  // namespace

// Sessions run from several threads, so steps add their times under a lock (only when profiling).
struct Session::Profile {
  struct Op {
    int64_t calls = 0;
    double seconds = 0;
    double regions = 0;  // of seconds, in the pool's parallel regions (ThreadPool::region_nanoseconds)
  };
  std::mutex mutex;
  // By node, each with its printed key made once: building the key (a string) and finding it in
  // a map on every call was a third of what a profiled run showed outside compute() (decode steps
  // of a Qwen2.5-0.5B-shaped model: 0.23 -> 0.15 ms a step, the rest the runtime's own work).
  struct NodeOp {
    std::string key;
    Op op;
  };
  std::unordered_map<const Node*, NodeOp> nodes;
  Op runs;  // Session::run(IoBinding&) calls and their wall time, kernels included
  // ONNXLLM_PROFILE_SKIP: the first `skip` runs are not counted (a generator's prompt, say, so
  // that the figures are its decode steps alone).
  int64_t skip = 0;
  std::atomic<int64_t> started{0};

  // Whether the run starting now is counted.
  bool begin_run() { return started.fetch_add(1, std::memory_order_relaxed) >= skip; }
  void add_run(double seconds) {
    std::lock_guard lock(mutex);
    ++runs.calls;
    runs.seconds += seconds;
  }

  bool by_node = false;  // ONNXLLM_PROFILE=node: by op and node name, not op type alone

  // op_name, and with by_node the node's name with each run of digits as '#': a layer's node
  // (/model/layers.#/mlp/down_proj/MatMul_Q#) sums over the layers.
  std::string key(const Node& node) const {
    std::string k = op_name(node);
    if (!by_node) return k;
    k += ' ';
    for (size_t i = 0; i < node.name.size(); ++i) {
      const bool digit = node.name[i] >= '0' && node.name[i] <= '9';
      if (!digit) k += node.name[i];
      else if (i == 0 || node.name[i - 1] < '0' || node.name[i - 1] > '9') k += '#';
    }
    return k;
  }

  void add(const Node& node, double seconds, double regions) {
    std::lock_guard lock(mutex);
    auto [it, fresh] = nodes.try_emplace(&node);
    if (fresh) it->second.key = key(node);
    ++it->second.op.calls;
    it->second.op.seconds += seconds;
    it->second.op.regions += regions;
  }
  ~Profile() {
    std::map<std::string, Op> ops;
    for (const auto& [node, n] : nodes) {
      Op& op = ops[n.key];
      op.calls += n.op.calls;
      op.seconds += n.op.seconds;
      op.regions += n.op.regions;
    }
    double total = 0, alone = 0;
    for (const auto& [name, op] : ops) total += op.seconds, alone += op.seconds - op.regions;
    std::vector<std::pair<std::string, Op>> sorted(ops.begin(), ops.end());
    std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
    std::fprintf(stderr, "onnxllm profile: compute() wall time by op, %.1f ms in all, %.1f ms of it outside the pool's "
                 "parallel regions (one thread at work)\n", total * 1e3, alone * 1e3);
    if (runs.calls)
      std::fprintf(stderr, "  %lld runs, %.1f ms from run() to its return: %.1f ms outside compute()%s\n",
                   static_cast<long long>(runs.calls), runs.seconds * 1e3, (runs.seconds - total) * 1e3,
                   skip > 0 ? str_cat(" (the first ", skip, " runs not counted)").c_str() : "");
    for (const auto& [name, op] : sorted)
      std::fprintf(stderr, "  %-40s %8lld calls %10.2f ms %5.1f%% %9.2f ms outside regions\n", name.c_str(),
                   static_cast<long long>(op.calls), op.seconds * 1e3, total > 0 ? 100 * op.seconds / total : 0.,
                   (op.seconds - op.regions) * 1e3);
  }
};

std::shared_ptr<Session> Session::load(const std::filesystem::path& model_path, const SessionOptions& options) {
  return std::make_shared<Session>(load_onnx_model(model_path), options);
}

Session::Session(std::shared_ptr<Graph> graph, const SessionOptions& options)
    : graph_(graph->clone()),
      pool_(options.pool ? options.pool : std::make_shared<ThreadPool>(options.num_threads)),
      memory_limit_bytes_(options.memory_limit_bytes),
      reuse_inference_(options.reuse_inference),
      verify_reuse_(options.verify_reuse) {
  if (const char* verify = std::getenv("ONNXLLM_VERIFY_REUSE")) verify_reuse_ = verify_reuse_ || std::string_view(verify) == "1";
  if (const char* profile = std::getenv("ONNXLLM_PROFILE");
      profile && (std::string_view(profile) == "1" || std::string_view(profile) == "node")) {
    profile_ = std::make_unique<Profile>();
    pool_->count_region_time();
    profile_->by_node = std::string_view(profile) == "node";
    if (const char* skip = std::getenv("ONNXLLM_PROFILE_SKIP"); skip && *skip) {
      const std::string_view s(skip);
      int64_t n = -1;
      const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
      ONNXLLM_CHECK(ec == std::errc() && end == s.data() + s.size() && n >= 0, kInvalidArgument,
                    "ONNXLLM_PROFILE_SKIP must be a count of runs (0 or more), got '", s, "'");
      profile_->skip = n;
    }
  }
  for (const auto& ep : options.providers) {
    ONNXLLM_CHECK(ep != nullptr, kInvalidArgument, "SessionOptions::providers holds a null provider");
    providers_.push_back(ep);
  }
  providers_.push_back(options.isa ? std::make_shared<CpuProvider>(*options.isa) : std::make_shared<CpuProvider>());
  const ExecutionProvider* cpu = providers_.back().get();
  graph_->remove_dead_nodes();  // nodes that no graph output depends on never run
  const char* fusions_env = std::getenv("ONNXLLM_FUSIONS");
  const bool fusions = options.fusions && !(fusions_env && std::string_view(fusions_env) == "0");
  if (fusions) gather_before_transpose(*graph_);
  if (options.constant_folding) fold_constants(*graph_, cpu->registry(), *pool_);
  if (fusions) run_fusions(*graph_);
  if (options.after_fusions) options.after_fusions(*graph_);

  // Build the plan (and the plans of every subgraph) once.
  // Kernel constructors (prepare: attributes, checks, prepacked weights) are independent of each
  // other, so they run on the pool; the first failure in plan order is the one reported.
  struct Chosen {
    const KernelDef* def;
    const ExecutionProvider* provider;
  };
  auto create_kernels = [&](const Graph& g, Plan& plan, const std::vector<std::pair<int, Chosen>>& pending) {
    std::vector<std::exception_ptr> errors(pending.size());
    std::atomic<size_t> next{0};
    pool_->run([&](int, int) {
      for (size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < pending.size();) {
        Plan::Step& step = plan.steps[pending[i].first];
        try {
          step.kernel = pending[i].second.def->factory(KernelInfo(*step.node, g, pending[i].second.provider));
          step.deps = step.kernel->infer_deps();
        } catch (...) {
          errors[i] = std::current_exception();
        }
      }
    });
    for (size_t i = 0; i < pending.size(); ++i) {
      if (!errors[i]) continue;
      try {
        std::rethrow_exception(errors[i]);
      } catch (const Error& e) {
        rethrow_with_label(*plan.steps[pending[i].first].node, e);
      }
    }
  };
  // The first provider with a kernel for the node's op, opset and dtype. Providers before the CPU
  // need the dtype to be declared: a node whose dtype the graph leaves open goes to the CPU, whose
  // kernels check dtypes when they run.
  auto choose = [&](const Node& node, const Graph& g) -> Chosen {
    const DType dtype = node_dtype(node, g);
    for (const auto& ep : providers_) {
      if (dtype == DType::kUndefined && ep.get() != cpu) continue;
      const KernelDef* def = ep->registry().find(node.domain, node.op_type, node.opset, dtype);
      if (def && def->factory) return {def, ep.get()};
    }
    const std::string op = op_name(node);
    const std::string domain = node.domain.empty() ? "ai.onnx" : node.domain;
    bool known = false, at_opset = false;
    std::string names;
    for (const auto& ep : providers_) {
      known = known || ep->registry().has_op(node.domain, node.op_type);
      at_opset = at_opset || ep->registry().find(node.domain, node.op_type, node.opset, DType::kUndefined);
      names += str_cat(names.empty() ? "" : ", ", ep->name());
    }
    if (!known)
      throw_error(ErrorCode::kUnsupported, "unknown operator ", op, " (domain '", domain, "') in node '", node.name,
                  "' is not supported");
    if (!at_opset)
      throw_error(ErrorCode::kUnsupported, "operator ", op, " (domain '", domain, "', opset ", node.opset,
                  ") in node '", node.name, "' is not supported at this opset");
    throw_error(ErrorCode::kUnsupported, "operator ", op, " (domain '", domain, "', opset ", node.opset, ") in node '",
                node.name, "': inputs of dtype ", dtype_name(dtype), " are not supported by any execution provider (",
                names, ")");
  };
  // The provider whose device memory a provider's kernels use; nullptr: host memory.
  auto memory_of = [](const ExecutionProvider* ep) -> const ExecutionProvider* {
    return ep->device().host_accessible() ? nullptr : ep;
  };
  // `parent_host`: the id of each parent value's host copy, for If branches.
  std::function<std::unique_ptr<Plan>(const Graph&, const Graph*, const std::vector<int>*)> build =
      [&](const Graph& g, const Graph* parent, const std::vector<int>* parent_host) {
    auto plan = std::make_unique<Plan>();
    plan->graph = &g;
    const int n = static_cast<int>(g.values.size());
    plan->initial_values.resize(n);
    plan->device_of.assign(n, nullptr);
    for (int v = 0; v < n; ++v)
      if (g.values[v].initializer) plan->initial_values[v] = g.values[v].initializer->view;
    for (int v = 0; v < n; ++v) {
      if (!g.values[v].is_outer) continue;
      const int pv = parent ? parent->find_value(g.values[v].name) : -1;
      ONNXLLM_CHECK(pv >= 0, kInvalidModel, "value '", g.values[v].name, "' is used but never defined");
      plan->outer_map.emplace_back(v, parent_host ? (*parent_host)[pv] : pv);
    }

    // Partition boundaries: a value lives in the memory of the step that writes it (graph inputs,
    // initializers and graph outputs in host memory); a step reading it from another memory reads a
    // copy, made once per memory by a copy step before the first such reader (for initializers:
    // once, here).
    std::vector<std::vector<int>> copies(n);  // by graph value: its copies in other memories
    auto add_value = [&](const ExecutionProvider* memory) {
      plan->initial_values.emplace_back();
      plan->device_of.push_back(memory);
      return static_cast<int>(plan->device_of.size()) - 1;
    };
    auto add_copy_step = [&](int value, int src, int dst, const ExecutionProvider* by) {
      Plan::Step& step = plan->steps.emplace_back();
      step.copy_of = value;
      step.inputs = {src};
      step.outputs = {dst};
      step.provider = by;
      ++plan->copies;
    };
    std::function<int(int, const ExecutionProvider*)> in_memory = [&](int v, const ExecutionProvider* memory) {
      if (plan->device_of[v] == memory) return v;
      for (int c : copies[v])
        if (plan->device_of[c] == memory) return c;
      // Between two devices the value goes through host memory.
      const int src = memory && plan->device_of[v] ? in_memory(v, nullptr) : v;
      const int c = add_value(memory);
      const Initializer* init = g.values[v].initializer ? &*g.values[v].initializer : nullptr;
      if (init && memory) {
        Tensor on_device(init->view.dtype(), init->view.shape(), memory->allocator());
        memory->copy(init->view, on_device.view());
        plan->initial_values[c] = on_device.view();
        plan->device_constants.push_back(std::move(on_device));
      } else {
        add_copy_step(v, src, c, memory ? memory : plan->device_of[src]);
      }
      copies[v].push_back(c);
      return c;
    };

    const std::vector<int> order = g.topological_order();
    std::vector<std::pair<int, Chosen>> pending;  // steps whose kernels are created below
    for (int s = 0; s < static_cast<int>(order.size()); ++s) {
      const Node& node = g.nodes[order[s]];
      plan->max_arity = std::max({plan->max_arity, node.inputs.size(), node.outputs.size()});
      const bool is_if = node.domain.empty() && node.op_type == "If";
      const Chosen chosen = is_if ? Chosen{nullptr, cpu} : choose(node, g);
      const ExecutionProvider* memory = memory_of(chosen.provider);
      Plan::Step step;
      step.node = &node;
      step.provider = chosen.provider;
      step.device_allocator = memory ? &memory->allocator() : nullptr;
      for (int v : node.inputs) step.inputs.push_back(v >= 0 ? in_memory(v, memory) : -1);
      if (is_if) {
        auto then_g = node.attr_graph("then_branch");
        auto else_g = node.attr_graph("else_branch");
        ONNXLLM_CHECK(then_g && else_g, kInvalidModel, node.label(), ": needs then_branch and else_branch graphs");
        std::vector<int> host(n);
        for (int v = 0; v < n; ++v) host[v] = v;
        for (int v : node.implicit_inputs) step.implicit_inputs.push_back(host[v] = in_memory(v, nullptr));
        step.branches.push_back(build(*then_g, &g, &host));
        step.branches.push_back(build(*else_g, &g, &host));
      }
      // A device step writes graph outputs into device values copied to the host after it.
      std::vector<std::pair<int, int>> to_host;
      for (int v : node.outputs) {
        if (v >= 0 && memory && g.values[v].is_graph_output) {
          const int d = add_value(memory);
          copies[v].push_back(d);
          to_host.emplace_back(d, v);
          step.outputs.push_back(d);
          continue;
        }
        if (v >= 0) plan->device_of[v] = memory;
        step.outputs.push_back(v);
      }
      if (!is_if) pending.emplace_back(static_cast<int>(plan->steps.size()), chosen);
      plan->steps.push_back(std::move(step));
      for (const auto& [d, v] : to_host) add_copy_step(v, d, v, memory);
    }
    create_kernels(g, *plan, pending);

    const int num_values = static_cast<int>(plan->device_of.size());
    std::vector<int> last_use(num_values, -1), produced_at(num_values, -1);
    for (int s = 0; s < static_cast<int>(plan->steps.size()); ++s) {
      const Plan::Step& step = plan->steps[s];
      for (int v : step.inputs)
        if (v >= 0) last_use[v] = s;
      for (int v : step.implicit_inputs) last_use[v] = s;
      for (int v : step.outputs)
        if (v >= 0) produced_at[v] = s;
    }
    for (int v = 0; v < num_values; ++v) {
      if ((v < n && g.values[v].is_graph_output) || produced_at[v] < 0) continue;
      const int at = std::max(last_use[v], produced_at[v]);
      plan->steps[at].free_after.push_back(v);
    }
    return plan;
  };
  plan_ = build(*graph_, nullptr, nullptr);

  plan_->output_slot.assign(plan_->device_of.size(), -1);
  for (int i = 0; i < static_cast<int>(graph_->outputs.size()); ++i) {
    const int v = graph_->outputs[i];
    if (plan_->output_slot[v] < 0) plan_->output_slot[v] = i;
  }
  // A root If's branches write the graph outputs it returns straight into their bound memory, as
  // root steps do (a KV cache bound as past and present is then updated in place by the branch).
  for (auto& step : plan_->steps) {
    for (auto& branch : step.branches) {
      branch->output_slot.assign(branch->device_of.size(), -1);
      const auto& outs = branch->graph->outputs;
      for (size_t i = 0; i < outs.size() && i < step.outputs.size(); ++i) {
        const int v = step.outputs[i];
        if (v >= 0 && plan_->device_of[v] == nullptr && branch->device_of[outs[i]] == nullptr &&
            branch->output_slot[outs[i]] < 0)
          branch->output_slot[outs[i]] = plan_->output_slot[v];
      }
    }
  }
  for (int v : graph_->inputs) inputs_.push_back(io_info(graph_->values[v]));
  for (int v : graph_->outputs) outputs_.push_back(io_info(graph_->values[v]));
}

Session::~Session() = default;

void Session::check_output_size(const std::string& name, size_t bytes) const {
  const size_t limit = memory_limit_bytes_ ? memory_limit_bytes_ : (size_t{64} << 30);
  ONNXLLM_CHECK(bytes <= limit, kOutOfMemory, "output '", name, "' would need ", bytes, " bytes, over the limit of ",
                limit);
}

int Session::input_index(const std::string& name) const {
  for (size_t i = 0; i < inputs_.size(); ++i)
    if (inputs_[i].name == name) return static_cast<int>(i);
  return -1;
}

std::string Session::input_names() const {
  std::string names;
  for (const auto& in : inputs_) names += (names.empty() ? "" : ", ") + in.name;
  return names;
}

int Session::output_index(const std::string& name) const {
  for (size_t i = 0; i < outputs_.size(); ++i)
    if (outputs_[i].name == name) return static_cast<int>(i);
  return -1;
}

std::vector<std::pair<std::string, int>> Session::provider_node_counts() const {
  std::map<std::string, int> counts;
  for (const auto& s : plan_->steps)
    if (s.node) counts[std::string(s.provider->name())]++;
  return {counts.begin(), counts.end()};
}

std::vector<std::pair<const Node*, OpKernel::PackedWeights>> Session::packed_weights() const {
  std::vector<std::pair<const Node*, OpKernel::PackedWeights>> packed;
  for (const auto& s : plan_->steps) {
    if (!s.node || !s.kernel) continue;
    OpKernel::PackedWeights w = s.kernel->packed_weights();
    if (!w.inputs.empty()) packed.emplace_back(s.node, std::move(w));
  }
  return packed;
}

int Session::copy_step_count() const {
  const auto count = [](const Plan& plan, const auto& self) -> int {
    int copies = plan.copies;
    for (const auto& s : plan.steps)
      for (const auto& branch : s.branches) copies += self(*branch, self);
    return copies;
  };
  return count(*plan_, count);
}

std::vector<Session::OpAssignment> Session::op_assignments() const {
  std::map<std::pair<std::string, std::string>, int> counts;
  const auto count = [&](const Plan& plan, const auto& self) -> void {
    for (const auto& s : plan.steps) {
      if (!s.node) continue;  // a copy
      counts[{op_name(*s.node), std::string(s.provider->name())}]++;
      for (const auto& branch : s.branches) self(*branch, self);
    }
  };
  count(*plan_, count);
  std::vector<OpAssignment> result;
  for (const auto& [key, n] : counts) result.push_back({key.first, key.second, n});
  return result;
}

std::vector<Tensor> Session::run(const std::vector<std::pair<std::string, TensorView>>& inputs,
                                 const std::vector<std::string>& output_names) const {
  IoBinding binding(*this);
  for (const auto& [name, view] : inputs) binding.bind_input(name, view);
  run(binding);
  std::vector<Tensor> result;
  if (output_names.empty()) {
    for (size_t i = 0; i < outputs_.size(); ++i) result.push_back(Tensor::copy_of(binding.output(static_cast<int>(i))));
  } else {
    for (const auto& name : output_names) result.push_back(Tensor::copy_of(binding.output(name)));
  }
  return result;
}

void Session::check_input(int index, const TensorView& t) const {
  const IoInfo& info = inputs_.at(static_cast<size_t>(index));
  ONNXLLM_CHECK(!t.empty(), kInvalidArgument, "input '", info.name, "' is not bound");
  ONNXLLM_CHECK(t.on_host(), kInvalidArgument, "input '", info.name, "' must be in host memory (the session copies "
                "it to the devices that read it)");
  ONNXLLM_CHECK(info.dtype == DType::kUndefined || t.dtype() == info.dtype, kInvalidArgument, "input '", info.name,
                "' must be ", dtype_name(info.dtype), " but a ", dtype_name(t.dtype()), " tensor was given");
  if (!info.dims.empty() || graph_->values[graph_->inputs[index]].dims) {
    ONNXLLM_CHECK(t.rank() == static_cast<int>(info.dims.size()), kInvalidArgument, "input '", info.name,
                  "' must have rank ", info.dims.size(), " but has shape ", t.shape().to_string());
    for (int d = 0; d < t.rank(); ++d)
      ONNXLLM_CHECK(info.dims[d] < 0 || info.dims[d] == t.shape()[d], kInvalidArgument, "input '", info.name,
                    "' dimension ", d, " must be ", info.dims[d], " but is ", t.shape()[d]);
  }
}

void Session::run(IoBinding& binding) const {
  ONNXLLM_CHECK(&binding.session_ == this, kInvalidArgument, "the IoBinding belongs to another session");
  for (size_t i = 0; i < inputs_.size(); ++i) check_input(static_cast<int>(i), binding.inputs_[i]);
  ExecutionFrame& frame = *binding.frame_;
  frame.profiled = profile_ && profile_->begin_run();
  const auto start = frame.profiled ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  if (frame.paged_kv) frame.paged_kv->check();
  frame.memory.begin_run();
  frame.stats = RunStats{};
  ThreadPool::SpinScope spin(pool_.get());
  FrameLevel& level = frame.level(plan_.get(), plan_->initial_values);
  for (size_t i = 0; i < inputs_.size(); ++i) level.values[graph_->inputs[i]] = binding.inputs_[i];

  for (auto& slot : binding.outputs_) slot.view = TensorView();
  execute(*plan_, frame, {}, &binding);
  frame.memory.end_run();
  frame.stats.memory = frame.memory.stats();

  for (size_t i = 0; i < outputs_.size(); ++i) {
    auto& slot = binding.outputs_[i];
    const TensorView& src = level.values[graph_->outputs[i]];
    ONNXLLM_CHECK(!src.empty(), kRuntime, "output '", outputs_[i].name, "' was not produced");
    if (!slot.view.empty() && slot.view.raw() == src.raw()) continue;  // computed in place
    if (slot.user) {
      ONNXLLM_CHECK(src.bytes() <= slot.capacity, kInvalidArgument, "output '", outputs_[i].name, "' needs ",
                    src.bytes(), " bytes but its bound buffer holds ", slot.capacity);
      if (src.bytes() && src.raw() != slot.user) std::memmove(slot.user, src.raw(), src.bytes());
      slot.view = TensorView(slot.user, src.dtype(), src.shape());
    } else {
      check_output_size(outputs_[i].name, src.bytes());
      slot.owned.resize(src.dtype(), src.shape());
      if (src.bytes()) std::memmove(slot.owned.view().raw(), src.raw(), src.bytes());
      slot.view = slot.owned.view();
    }
  }
  if (frame.profiled) profile_->add_run(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

void Session::execute(const Plan& plan, ExecutionFrame& frame, std::span<const TensorView> outer,
                      IoBinding* binding) const {
  FrameLevel& level = *frame.levels.at(&plan);  // reset by the caller
  for (const auto& [v, pv] : plan.outer_map) level.values[v] = outer[pv];
  MemoryPlan& memory = frame.memory;
  level.memo.resize(plan.steps.size());
  level.step_inputs.resize(plan.max_arity);
  level.step_outputs.resize(plan.max_arity);
  level.step_specs.resize(plan.max_arity);

  // Gives output value v (of the step) memory for `spec`: the arena, a bound output, or the
  // device memory of the provider holding v.
  auto place_output = [&](int v, const OutputSpec& spec, std::span<const int> step_inputs) -> TensorView {
    const size_t bytes = spec.shape.checked_bytes(dtype_size(spec.dtype));
    if (spec.alias_input >= 0) {
      const int src = step_inputs[spec.alias_input];
      const TensorView& in = level.values[src];
      ONNXLLM_CHECK(bytes == in.bytes(), kRuntime, "an aliased output must keep the input's size");
      const int r = level.root[src];
      level.root[v] = r;
      if (r >= 0) ++level.refs[r];
      return TensorView(in.raw(), spec.dtype, spec.shape, in.device());
    }
    if (const ExecutionProvider* device = plan.device_of[v]) {
      Allocator& allocator = device->allocator();
      void* p = allocator.allocate(bytes);
      level.root[v] = v;
      level.refs[v] = 1;
      level.block[v] = p;
      level.device_allocator[v] = &allocator;
      ++level.device_blocks;
      return TensorView(p, spec.dtype, spec.shape, allocator.device());
    }
    if (binding && !plan.output_slot.empty() && plan.output_slot[v] >= 0) {
      auto& slot = binding->outputs_[plan.output_slot[v]];
      void* p;
      if (slot.user) {
        ONNXLLM_CHECK(bytes <= slot.capacity, kInvalidArgument, "output '", plan.graph->values[v].name, "' needs ",
                      bytes, " bytes but its bound buffer holds ", slot.capacity);
        p = slot.user;
      } else {
        check_output_size(plan.graph->values[v].name, bytes);
        slot.owned.resize(spec.dtype, spec.shape);
        p = slot.owned.view().raw();
      }
      slot.view = TensorView(p, spec.dtype, spec.shape);
      return slot.view;
    }
    void* p = memory.allocate(bytes);
    level.root[v] = v;
    level.refs[v] = 1;
    level.block[v] = p;
    return TensorView(p, spec.dtype, spec.shape);
  };

  for (size_t step_index = 0; step_index < plan.steps.size(); ++step_index) {
    const Plan::Step& step = plan.steps[step_index];
    ONNXLLM_CHECK(frame.terminate == nullptr || !frame.terminate->load(std::memory_order_relaxed), kRuntime,
                  "the session was terminated (run option terminate_session)");
    if (!step.node) {  // a copy at a partition boundary
      const int src = step.inputs[0], dst = step.outputs[0];
      const TensorView& from = level.values[src];
      try {
        const TensorView to = place_output(dst, OutputSpec{from.dtype(), from.shape(), -1}, {});
        step.provider->copy(from, to);
        level.values[dst] = to;
      } catch (const Error& e) {
        throw Error(e.code(), str_cat(step.provider->name(), ": copying '", plan.graph->values[step.copy_of].name, "' to ",
                                      plan.device_of[dst] ? "device" : "host", " memory: ", e.what()));
      }
      for (int v : step.free_after) release(level, memory, v);
      continue;
    }
    const Node& node = *step.node;
    const size_t n_in = step.inputs.size(), n_out = step.outputs.size();
    for (size_t i = 0; i < n_in; ++i)
      level.step_inputs[i] = step.inputs[i] >= 0 ? level.values[step.inputs[i]] : TensorView();
    std::span<const TensorView> inputs(level.step_inputs.data(), n_in);
#ifndef NDEBUG
    // The copies put every input in the memory of the step's provider (CPU kernels: host memory).
    for (const TensorView& t : inputs)
      ONNXLLM_CHECK(t.empty() || t.on_host() == (step.device_allocator == nullptr), kRuntime, node.label(),
                    ": input in the wrong memory");
#endif
    std::span<OutputSpec> specs(level.step_specs.data(), n_out);
    for (auto& sp : specs) sp = OutputSpec{};

    if (!step.branches.empty()) {  // If
      try {
        ONNXLLM_CHECK(n_in >= 1, kInvalidModel, "If needs a condition input");
        const TensorView& cond = inputs[0];
        ONNXLLM_CHECK(!cond.empty() && cond.numel() == 1 && cond.dtype() == DType::kBool, kInvalidArgument,
                      "condition must be a single bool");
        const Plan& branch = *step.branches[*cond.data<bool>() ? 0 : 1];
        ONNXLLM_CHECK(branch.graph->outputs.size() == n_out, kInvalidModel, "branch '", branch.graph->name,
                      "' has ", branch.graph->outputs.size(), " outputs but the node has ", n_out);
        frame.level(&branch, branch.initial_values);
        execute(branch, frame, level.values, binding);
        FrameLevel& sub = *frame.levels.at(&branch);
        for (size_t i = 0; i < n_out; ++i) {
          const TensorView& src = sub.values[branch.graph->outputs[i]];
          if (step.outputs[i] < 0) continue;
          OutputSpec spec{src.dtype(), src.shape(), -1};
          TensorView dst = place_output(step.outputs[i], spec, step.inputs);
          if (src.bytes() && dst.raw() != src.raw()) std::memcpy(dst.raw(), src.raw(), src.bytes());
          level.values[step.outputs[i]] = dst;
        }
        for (int v : branch.graph->outputs) release(sub, memory, v);
      } catch (const Error& e) {
        rethrow_with_label(node, e);
      }
    } else {
      InferContext ictx(node, inputs, specs, pool_->num_threads(), frame.paged_kv);
      size_t workspace_bytes = 0;
      std::span<const TensorView> outputs(level.step_outputs.data(), n_out);
      ++frame.stats.steps;
      try {
        StepMemo* memo = nullptr;
        if (step.deps.reusable && reuse_inference_ && !(step.deps.reads_paged_kv && frame.paged_kv)) {
          memo = &level.memo[step_index];
          if (!inference_key(inputs, step.deps.value_inputs, level.step_key)) memo = nullptr;
        }
        const bool hit = memo && memo->valid && memo->key == level.step_key;
        frame.stats.reused += hit;
        if (hit && !verify_reuse_) {
          std::copy(memo->specs.begin(), memo->specs.end(), specs.begin());
          workspace_bytes = memo->workspace_bytes;
        } else {
          step.kernel->infer(ictx);
          ++frame.stats.inferred;
          workspace_bytes = ictx.workspace_bytes();
          if (hit) {
            ONNXLLM_CHECK(same_specs(memo->specs, specs) && memo->workspace_bytes == workspace_bytes, kRuntime,
                          "infer() gave another result for the same inputs than the reused one: the kernel's "
                          "infer_deps() does not name everything infer() reads");
          } else if (memo) {
            memo->key = level.step_key;
            memo->specs.assign(specs.begin(), specs.end());
            memo->workspace_bytes = workspace_bytes;
            memo->valid = true;
          }
        }
        for (size_t i = 0; i < n_out; ++i) {
          const int v = step.outputs[i];
          if (v < 0) {  // unnamed output: scratch for this step if the kernel defines it
            level.step_outputs[i] = TensorView();
            if (specs[i].dtype != DType::kUndefined && specs[i].alias_input < 0) {
              const size_t bytes = specs[i].shape.checked_bytes(dtype_size(specs[i].dtype));
              void* p = step.device_allocator ? step.device_allocator->allocate(bytes) : memory.allocate(bytes);
              level.step_outputs[i] = TensorView(p, specs[i].dtype, specs[i].shape,
                                                 step.device_allocator ? step.device_allocator->device() : kHostDevice);
            }
            continue;
          }
          ONNXLLM_CHECK(specs[i].dtype != DType::kUndefined, kRuntime, "kernel did not define output ", i);
          level.step_outputs[i] = level.values[v] = place_output(v, specs[i], step.inputs);
        }
      } catch (const Error& e) {
        rethrow_with_label(node, e);
      }
      Allocator* device = step.device_allocator;  // nullptr: the arena
      void* workspace = nullptr;
      if (workspace_bytes) workspace = device ? device->allocate(workspace_bytes) : memory.allocate(workspace_bytes);
      const auto start = frame.profiled ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
      const int64_t regions = frame.profiled ? pool_->region_nanoseconds() : 0;
      step.kernel->compute(ComputeContext(inputs, outputs, workspace, workspace_bytes, pool_.get(), frame.paged_kv));
      if (frame.profiled)
        profile_->add(node, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                      static_cast<double>(pool_->region_nanoseconds() - regions) * 1e-9);
      if (workspace) device ? device->free(workspace) : memory.free(workspace);
      for (size_t i = 0; i < n_out; ++i) {
        if (step.outputs[i] >= 0 || level.step_outputs[i].empty()) continue;
        device ? device->free(level.step_outputs[i].raw()) : memory.free(level.step_outputs[i].raw());
      }
    }
    for (int v : step.free_after) release(level, memory, v);
  }
}

}  // namespace onnxllm
