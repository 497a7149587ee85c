// `onnxllm onnx-test DIR...`: runs ONNX backend test folders (model.onnx + test_data_set_N/*.pb).
// A DIR without model.onnx is searched one level down, so the whole node suite runs with one DIR.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>

#include "core/error.h"
#include "onnx/tensor_proto.h"
#include "runtime/io_binding.h"
#include "runtime/session.h"
#include "tools/cli/commands.h"

namespace onnxllm::cli {
namespace fs = std::filesystem;
namespace {

enum class Outcome { kPass, kFail, kSkip };

double value_at(const TensorView& t, int64_t i) {
  double v = 0;
  dispatch_dtype<float, double, Float16, BFloat16, int8_t, uint8_t, int16_t, uint16_t, int32_t, uint32_t, int64_t,
                 uint64_t, bool>(t.dtype(), [&]<typename T>() {
    if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) v = static_cast<float>(t.data<T>()[i]);
    else v = static_cast<double>(t.data<T>()[i]);
  });
  return v;
}

// Empty string when equal within tolerance, else a description of the first mismatch.
std::string compare(const TensorView& got, const TensorView& want, double rtol, double atol) {
  if (got.dtype() != want.dtype())
    return str_cat("dtype ", dtype_name(got.dtype()), " but expected ", dtype_name(want.dtype()));
  if (got.shape() != want.shape())
    return str_cat("shape ", got.shape().to_string(), " but expected ", want.shape().to_string());
  const bool is_float = dtype_is_float(want.dtype());
  if (want.dtype() == DType::kFloat16 || want.dtype() == DType::kBFloat16) {
    rtol = std::max(rtol, want.dtype() == DType::kBFloat16 ? 2e-2 : 2e-3);
    atol = std::max(atol, 1e-3);
  }
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double g = value_at(got, i), w = value_at(want, i);
    if (is_float) {
      if (std::isnan(w) && std::isnan(g)) continue;
      if (std::isinf(w) && g == w) continue;
      if (std::fabs(g - w) <= atol + rtol * std::fabs(w)) continue;
    } else if (g == w) {
      continue;
    }
    return str_cat("element ", i, " is ", g, " but expected ", w);
  }
  return "";
}

std::vector<fs::path> sorted_entries(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(e.path());
  // Sort by the number after the prefix (input_10 after input_9).
  std::sort(out.begin(), out.end(), [&](const fs::path& a, const fs::path& b) {
    auto num = [&](const fs::path& p) {
      const std::string s = p.stem().string().substr(prefix.size());
      return s.empty() ? 0L : std::strtol(s.c_str(), nullptr, 10);
    };
    return num(a) < num(b);
  });
  return out;
}

Outcome run_test(const fs::path& dir, int threads, std::string& reason) {
  try {
    SessionOptions options;
    options.num_threads = threads;
    auto session = Session::load(dir / "model.onnx", options);
    const auto sets = sorted_entries(dir, "test_data_set_");
    if (sets.empty()) {
      reason = "no test_data_set folders";
      return Outcome::kSkip;
    }
    for (const auto& set : sets) {
      IoBinding binding(*session);
      std::vector<Tensor> inputs, expected;
      for (const auto& p : sorted_entries(set, "input_")) inputs.push_back(load_tensor_file(p).second);
      for (const auto& p : sorted_entries(set, "output_")) expected.push_back(load_tensor_file(p).second);
      ONNXLLM_CHECK(inputs.size() == session->inputs().size(), kInvalidArgument, "test has ", inputs.size(),
                    " inputs but the model declares ", session->inputs().size());
      // ONNX 1.12 test data stores bfloat16 tensors as uint16 bit patterns.
      auto as_declared = [](Tensor& t, DType declared) {
        if (declared == DType::kBFloat16 && t.dtype() == DType::kUInt16) t = Tensor::copy_of(t.view().retyped(DType::kBFloat16));
      };
      for (size_t i = 0; i < inputs.size(); ++i) {
        const IoInfo& info = session->inputs()[i];
        as_declared(inputs[i], info.dtype);
        bool shape_ok = info.dims.empty() || static_cast<int>(info.dims.size()) == inputs[i].shape().rank();
        for (size_t d = 0; shape_ok && d < info.dims.size(); ++d)
          shape_ok = info.dims[d] < 0 || info.dims[d] == inputs[i].shape()[static_cast<int>(d)];
        if (!shape_ok) {
          reason = str_cat("test data for input '", info.name, "' has shape ", inputs[i].shape().to_string(),
                           " but the model declares a different static shape (bad test data)");
          return Outcome::kSkip;
        }
      }
      for (size_t i = 0; i < expected.size() && i < session->outputs().size(); ++i)
        as_declared(expected[i], session->outputs()[i].dtype);
      for (size_t i = 0; i < inputs.size(); ++i) binding.bind_input(static_cast<int>(i), inputs[i]);
      session->run(binding);
      ONNXLLM_CHECK(expected.size() <= session->outputs().size(), kInvalidArgument, "test expects ", expected.size(),
                    " outputs but the model has ", session->outputs().size());
      for (size_t i = 0; i < expected.size(); ++i) {
        const std::string diff = compare(binding.output(static_cast<int>(i)), expected[i], 1e-3, 1e-5);
        if (!diff.empty()) {
          reason = str_cat(set.filename().string(), ": output '", session->outputs()[i].name, "' ", diff);
          return Outcome::kFail;
        }
      }
    }
    return Outcome::kPass;
  } catch (const Error& e) {
    reason = e.what();
    return e.code() == ErrorCode::kUnsupported ? Outcome::kSkip : Outcome::kFail;
  } catch (const std::exception& e) {
    reason = e.what();
    return Outcome::kFail;
  }
}

}  // namespace

Command add_onnx_test_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("onnx-test", "Run ONNX backend test folders (model.onnx + test_data_set_N)");
  auto dirs = std::make_shared<std::vector<std::string>>();
  auto threads = std::make_shared<int>(1);
  auto filter = std::make_shared<std::string>();
  cmd->add_option("dirs", *dirs, "Test folders, or folders of test folders")->required();
  add_threads_option(cmd, *threads, "Intra-op threads")->capture_default_str();
  cmd->add_option("--filter", *filter, "Only run tests whose name contains this text");
  return {cmd, [=] {
    std::vector<fs::path> tests;
    for (const auto& d : *dirs) {
      const fs::path p(d);
      ONNXLLM_CHECK(fs::is_directory(p), kNotFound, "no such folder: ", d);
      if (fs::exists(p / "model.onnx")) {
        tests.push_back(p);
        continue;
      }
      std::vector<fs::path> sub;
      for (const auto& e : fs::directory_iterator(p))
        if (fs::exists(e.path() / "model.onnx")) sub.push_back(e.path());
      std::sort(sub.begin(), sub.end());
      tests.insert(tests.end(), sub.begin(), sub.end());
    }
    int passed = 0, failed = 0, skipped = 0;
    for (const auto& t : tests) {
      const std::string name = t.filename().string();
      if (!filter->empty() && name.find(*filter) == std::string::npos) continue;
      std::string reason;
      switch (run_test(t, *threads, reason)) {
        case Outcome::kPass: ++passed; std::cout << "PASS " << name << "\n"; break;
        case Outcome::kFail: ++failed; std::cout << "FAIL " << name << ": " << reason << "\n"; break;
        case Outcome::kSkip: ++skipped; std::cout << "SKIP " << name << ": " << reason << "\n"; break;
      }
      std::cout.flush();
    }
    std::cout << passed << " passed, " << failed << " failed, " << skipped << " skipped\n";
    return failed ? 1 : 0;
  }};
}

}  // namespace onnxllm::cli
