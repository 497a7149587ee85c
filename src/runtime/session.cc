#include "runtime/session.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <string_view>

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
    const Node* node = nullptr;
    std::unique_ptr<OpKernel> kernel;
    std::vector<std::unique_ptr<Plan>> branches;  // If: then, else
    std::vector<int> free_after;                  // values whose last reader is this step
    std::string_view provider;
    InferDeps deps;  // the kernel's, read once
  };
  const Graph* graph = nullptr;
  std::vector<Step> steps;
  std::vector<TensorView> initial_values;         // initializer views, by value id
  std::vector<std::pair<int, int>> outer_map;     // (value id here, value id in the parent graph)
  std::vector<int> output_slot;                   // value id -> graph output index (root plan), -1
  size_t max_arity = 0;
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
    memory.free(level.block[r]);
    level.block[r] = nullptr;
  }
}

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
    if (bytes > kMaxKeyValueBytes) return false;
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
  providers_.push_back(options.isa ? std::make_unique<CpuProvider>(*options.isa) : std::make_unique<CpuProvider>());
  graph_->remove_dead_nodes();  // nodes that no graph output depends on never run
  const char* fusions_env = std::getenv("ONNXLLM_FUSIONS");
  const bool fusions = options.fusions && !(fusions_env && std::string_view(fusions_env) == "0");
  if (fusions) gather_before_transpose(*graph_);
  if (options.constant_folding) fold_constants(*graph_, providers_.front()->registry(), *pool_);
  if (fusions) run_fusions(*graph_);

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
  std::function<std::unique_ptr<Plan>(const Graph&, const Graph*)> build = [&](const Graph& g, const Graph* parent) {
    auto plan = std::make_unique<Plan>();
    plan->graph = &g;
    const int n = static_cast<int>(g.values.size());
    plan->initial_values.resize(n);
    for (int v = 0; v < n; ++v)
      if (g.values[v].initializer) plan->initial_values[v] = g.values[v].initializer->view;
    for (int v = 0; v < n; ++v) {
      if (!g.values[v].is_outer) continue;
      const int pv = parent ? parent->find_value(g.values[v].name) : -1;
      ONNXLLM_CHECK(pv >= 0, kInvalidModel, "value '", g.values[v].name, "' is used but never defined");
      plan->outer_map.emplace_back(v, pv);
    }
    const std::vector<int> order = g.topological_order();
    std::vector<int> last_use(n, -1), produced_at(n, -1);
    for (int s = 0; s < static_cast<int>(order.size()); ++s) {
      const Node& node = g.nodes[order[s]];
      for (int v : node.inputs)
        if (v >= 0) last_use[v] = s;
      for (int v : node.implicit_inputs) last_use[v] = s;
      for (int v : node.outputs)
        if (v >= 0) produced_at[v] = s;
    }
    plan->steps.resize(order.size());
    std::vector<std::pair<int, Chosen>> pending;  // steps whose kernels are created below
    for (int s = 0; s < static_cast<int>(order.size()); ++s) {
      const Node& node = g.nodes[order[s]];
      Plan::Step& step = plan->steps[s];
      step.node = &node;
      plan->max_arity = std::max({plan->max_arity, node.inputs.size(), node.outputs.size()});
      if (node.domain.empty() && node.op_type == "If") {
        auto then_g = node.attr_graph("then_branch");
        auto else_g = node.attr_graph("else_branch");
        ONNXLLM_CHECK(then_g && else_g, kInvalidModel, node.label(), ": needs then_branch and else_branch graphs");
        step.branches.push_back(build(*then_g, &g));
        step.branches.push_back(build(*else_g, &g));
        step.provider = providers_.front()->name();
        continue;
      }
      const KernelDef* chosen = nullptr;
      for (const auto& ep : providers_) {
        const KernelDef* def = ep->registry().find(node.domain, node.op_type, node.opset);
        if (!def || !def->factory) continue;
        chosen = def;
        step.provider = ep->name();
        pending.emplace_back(s, Chosen{def, ep.get()});
        break;
      }
      if (!chosen) {
        const std::string op = node.domain.empty() ? node.op_type : node.domain + "." + node.op_type;
        const bool known = providers_.front()->registry().has_op(node.domain, node.op_type);
        throw_error(ErrorCode::kUnsupported, known ? "operator " : "unknown operator ", op, " (domain '",
                    node.domain.empty() ? "ai.onnx" : node.domain, "'", known ? str_cat(", opset ", node.opset, ")") : ")",
                    " in node '", node.name, "' is not supported", known ? " at this opset" : "");
      }
    }
    create_kernels(g, *plan, pending);
    for (int v = 0; v < n; ++v) {
      const Value& val = g.values[v];
      if (val.is_graph_output || produced_at[v] < 0) continue;
      const int at = std::max(last_use[v], produced_at[v]);
      plan->steps[at].free_after.push_back(v);
    }
    return plan;
  };
  plan_ = build(*graph_, nullptr);

  plan_->output_slot.assign(graph_->values.size(), -1);
  for (int i = 0; i < static_cast<int>(graph_->outputs.size()); ++i) {
    const int v = graph_->outputs[i];
    if (plan_->output_slot[v] < 0) plan_->output_slot[v] = i;
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

int Session::output_index(const std::string& name) const {
  for (size_t i = 0; i < outputs_.size(); ++i)
    if (outputs_[i].name == name) return static_cast<int>(i);
  return -1;
}

std::vector<std::pair<std::string, int>> Session::provider_node_counts() const {
  std::map<std::string, int> counts;
  for (const auto& s : plan_->steps) counts[std::string(s.provider)]++;
  return {counts.begin(), counts.end()};
}

std::vector<Session::OpAssignment> Session::op_assignments() const {
  std::map<std::pair<std::string, std::string>, int> counts;
  const auto count = [&](const Plan& plan, const auto& self) -> void {
    for (const auto& s : plan.steps) {
      const Node& n = *s.node;
      counts[{n.domain.empty() ? n.op_type : n.domain + "." + n.op_type, std::string(s.provider)}]++;
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

void Session::run(IoBinding& binding) const {
  ONNXLLM_CHECK(&binding.session_ == this, kInvalidArgument, "the IoBinding belongs to another session");
  // Validate the feeds against the declared inputs.
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const IoInfo& info = inputs_[i];
    const TensorView& t = binding.inputs_[i];
    ONNXLLM_CHECK(!t.empty(), kInvalidArgument, "input '", info.name, "' is not bound");
    ONNXLLM_CHECK(info.dtype == DType::kUndefined || t.dtype() == info.dtype, kInvalidArgument, "input '", info.name,
                  "' must be ", dtype_name(info.dtype), " but a ", dtype_name(t.dtype()), " tensor was given");
    if (!info.dims.empty() || graph_->values[graph_->inputs[i]].dims) {
      ONNXLLM_CHECK(t.rank() == static_cast<int>(info.dims.size()), kInvalidArgument, "input '", info.name,
                    "' must have rank ", info.dims.size(), " but has shape ", t.shape().to_string());
      for (int d = 0; d < t.rank(); ++d)
        ONNXLLM_CHECK(info.dims[d] < 0 || info.dims[d] == t.shape()[d], kInvalidArgument, "input '", info.name,
                      "' dimension ", d, " must be ", info.dims[d], " but is ", t.shape()[d]);
    }
  }
  ExecutionFrame& frame = *binding.frame_;
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

  // Gives output value v (of the step's node) memory for `spec`.
  auto place_output = [&](int v, const OutputSpec& spec, std::span<const int> node_inputs) -> TensorView {
    const size_t bytes = spec.shape.checked_bytes(dtype_size(spec.dtype));
    if (spec.alias_input >= 0) {
      const int src = node_inputs[spec.alias_input];
      const TensorView& in = level.values[src];
      ONNXLLM_CHECK(bytes == in.bytes(), kRuntime, "an aliased output must keep the input's size");
      const int r = level.root[src];
      level.root[v] = r;
      if (r >= 0) ++level.refs[r];
      return TensorView(in.raw(), spec.dtype, spec.shape);
    }
    if (binding && plan.output_slot[v] >= 0) {
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
    const Node& node = *step.node;
    const size_t n_in = node.inputs.size(), n_out = node.outputs.size();
    for (size_t i = 0; i < n_in; ++i)
      level.step_inputs[i] = node.inputs[i] >= 0 ? level.values[node.inputs[i]] : TensorView();
    std::span<const TensorView> inputs(level.step_inputs.data(), n_in);
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
        execute(branch, frame, level.values, nullptr);
        FrameLevel& sub = *frame.levels.at(&branch);
        for (size_t i = 0; i < n_out; ++i) {
          const TensorView& src = sub.values[branch.graph->outputs[i]];
          if (node.outputs[i] < 0) continue;
          OutputSpec spec{src.dtype(), src.shape(), -1};
          TensorView dst = place_output(node.outputs[i], spec, node.inputs);
          if (src.bytes()) std::memcpy(dst.raw(), src.raw(), src.bytes());
          level.values[node.outputs[i]] = dst;
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
          const int v = node.outputs[i];
          if (v < 0) {  // unnamed output: scratch for this step if the kernel defines it
            level.step_outputs[i] = TensorView();
            if (specs[i].dtype != DType::kUndefined && specs[i].alias_input < 0) {
              void* p = memory.allocate(specs[i].shape.checked_bytes(dtype_size(specs[i].dtype)));
              level.step_outputs[i] = TensorView(p, specs[i].dtype, specs[i].shape);
            }
            continue;
          }
          ONNXLLM_CHECK(specs[i].dtype != DType::kUndefined, kRuntime, "kernel did not define output ", i);
          level.step_outputs[i] = level.values[v] = place_output(v, specs[i], node.inputs);
        }
      } catch (const Error& e) {
        rethrow_with_label(node, e);
      }
      void* workspace = nullptr;
      if (workspace_bytes) workspace = memory.allocate(workspace_bytes);
      step.kernel->compute(ComputeContext(inputs, outputs, workspace, workspace_bytes, pool_.get(), frame.paged_kv));
      if (workspace) memory.free(workspace);
      for (size_t i = 0; i < n_out; ++i)
        if (node.outputs[i] < 0 && !level.step_outputs[i].empty()) memory.free(level.step_outputs[i].raw());
    }
    for (int v : step.free_after) release(level, memory, v);
  }
}

}  // namespace onnxllm
