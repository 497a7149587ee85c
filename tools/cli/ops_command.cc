// `onnxllm ops`: the operators each execution provider supports.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <iostream>

#include "ep/cpu/cpu_provider.h"
#include "tools/cli/commands.h"

namespace onnxllm::cli {

Command add_ops_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("ops", "List supported operators: domain, op, opset range, dtypes, provider");
  return {cmd, [] {
    CpuProvider cpu;
    std::vector<const KernelDef*> defs;
    for (const auto& d : cpu.registry().all()) defs.push_back(&d);
    std::sort(defs.begin(), defs.end(), [](const KernelDef* a, const KernelDef* b) {
      return std::tie(a->domain, a->op_type, a->since_version) < std::tie(b->domain, b->op_type, b->since_version);
    });
    std::cout << "domain\top\topsets\tdtypes\tprovider\n";
    for (const KernelDef* d : defs) {
      std::string types;
      for (DType t : d->dtypes) {
        if (!types.empty()) types += ',';
        types += dtype_name(t);
      }
      const std::string range = d->end_version >= (1 << 30) ? std::to_string(d->since_version) + "+"
                                                            : std::to_string(d->since_version) + "-" + std::to_string(d->end_version);
      std::cout << (d->domain.empty() ? "ai.onnx" : d->domain) << "\t" << d->op_type << "\t" << range << "\t"
                << (types.empty() ? "-" : types) << "\t" << cpu.name() << "\n";
    }
    return 0;
  }};
}

}  // namespace onnxllm::cli
