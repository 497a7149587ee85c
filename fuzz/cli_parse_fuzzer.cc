// Feeds arbitrary bytes to the CLI's option-value parsers: --ids rows and --dim NAME=N. The
// first byte picks the parser. Besides crashes, checks what a parser returns against its
// contract: ids are in [0, INT32_MAX] and rows never empty, a dim's value is in [0, kMaxDimValue]
// and printing the parsed value back gives an equivalent text.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.h"
#include "fuzz/fuzz_contract.h"
#include "tools/cli/cli_parse.h"

using onnxllm::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace onnxllm;
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    if (data[0] % 2 == 0) {
      const auto rows = cli::parse_id_rows(text);
      std::string printed;
      for (const auto& row : rows) {
        require(!row.empty(), "an empty row");
        for (const int32_t id : row) require(id >= 0, "a negative id");
        for (size_t i = 0; i < row.size(); ++i) printed += (i ? "," : "") + std::to_string(row[i]);
        printed += ';';
        cli::check_ids_in_vocab(row, 512, "--ids");
      }
      printed.pop_back();
      require(cli::parse_id_rows(printed) == rows, "rows do not survive printing");
    } else {
      const auto [name, value] = cli::parse_dim(text);
      require(!name.empty() && value >= 0 && value <= cli::kMaxDimValue, "a dim out of range");
      require(cli::parse_dim(name + "=" + std::to_string(value)) == std::make_pair(name, value),
              "a dim does not survive printing");
    }
  } catch (const Error&) {
  }
  return 0;
}
