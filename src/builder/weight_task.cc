#include "builder/weight_task.h"

#include <map>

#include "builder/external_data_stream.h"
#include "builder/progress.h"
#include "core/error.h"

namespace onnxllm {

int64_t total_source_elements(const std::vector<WeightTask>& tasks) {
  int64_t n = 0;
  for (const auto& t : tasks) n += t.source_elements;
  return n;
}

int64_t run_weight_tasks(std::vector<WeightTask>& tasks, ExternalDataStream& out, Progress* progress) {
  int64_t written = 0;
  for (auto& task : tasks) {
    std::map<std::string, const WeightTask::Output*> pending;
    for (const auto& o : task.outputs) pending[o.name] = &o;
    task.run([&](const std::string& name, Tensor t) {
      auto it = pending.find(name);
      ONNXLLM_CHECK(it != pending.end(), kRuntime, "weight task emitted unexpected or repeated tensor '", name, "'");
      ONNXLLM_CHECK(t.dtype() == it->second->dtype && t.shape() == it->second->shape, kRuntime, "weight '", name,
                    "' came out as ", t.view().describe(), ", declared ", dtype_name(it->second->dtype),
                    it->second->shape.to_string());
      out.add(name, t.view());
      pending.erase(it);
      ++written;
    });
    ONNXLLM_CHECK(pending.empty(), kRuntime, "weight task did not produce '", pending.begin()->first, "'");
    task.run = nullptr;  // frees whatever the closure captured
    if (progress) progress->advance(task.source_elements, 1, task.outputs.empty() ? "" : task.outputs[0].name);
  }
  return written;
}

}  // namespace onnxllm
