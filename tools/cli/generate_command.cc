// `onnxllm generate -m DIR (--ids ROWS | --prompt TEXT | --prompt-file FILE | --chat TEXT) [search options]
// [--print-ids]`:
// runs a model folder (genai_config.json).
//   --ids "0,0,0,52;0,0,195,331"  token-id prompts, one per ';'-separated row (right-padded into
//                                  one batch with pad_token_id)
//   --prompt TEXT                  the text, encoded with the folder's tokenizer (special tokens
//                                  added as the tokenizer's config says)
//   --prompt-file FILE|-           the same, read from a file or from standard input ("-"), up to
//                                  kMaxPromptFileBytes
//   --chat TEXT                    one user message, rendered with the folder's chat template
//                                  (add_generation_prompt) and encoded without adding special
//                                  tokens (the template writes them), as transformers'
//                                  apply_chat_template(tokenize=True) does
//   --json-schema FILE|-           the generated text is a JSON value valid against the schema in
//                                  FILE (guidance, as set_guidance("json_schema", ...)); --json:
//                                  any JSON object; --regex PATTERN: text the pattern matches;
//                                  --grammar FILE|-: text of the Lark grammar in FILE (one of the four)
//   --ngram N [--draft-tokens K]   n-gram speculative decoding (speculative.ngram_size N,
//                                  max_draft_tokens K): the same tokens, several a run where the
//                                  text repeats; the rounds and accepted drafts go to stderr (so
//                                  they do for a model with a draft decoder, model.draft, whose
//                                  width --draft-tokens alone sets)
// Output: with --print-ids, each returned sequence (prompt included) as comma-separated ids on a
// line of its own; for one sequence (batch 1, no beam search) the line is written as the ids are
// generated, flushed per token, so an interrupted run keeps what it printed. Otherwise the
// generated text: streamed to stdout token by token for one sequence (batch 1, no beam search),
// else each returned sequence's generated text on its own line.
// Timings (prompt tokens, time to first token, prompt and decode tokens/s, total) go to stderr
// after the run, unless --no-timings.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "genai/chat_template/chat_template.h"
#include "genai/chat_template/chat_template_config.h"
#include "genai/generator/generator.h"
#include "genai/guidance/token_guide.h"
#include "genai/tokenizer/tokenizer.h"
#include "genai/tokenizer/tokenizer_stream.h"
#include "tools/cli/cli_parse.h"
#include "tools/cli/commands.h"
#include "tools/cli/generation_timings.h"
#include "tools/cli/search_args.h"

namespace onnxllm::cli {

namespace {

struct GenerateArgs {
  std::string model;
  std::string ids;
  std::string prompt;
  std::string prompt_file;
  std::string chat;
  SearchArgs search;
  std::optional<int> max_new_tokens;
  int threads = 0;
  std::string kv_cache;
  std::optional<int> ngram;
  std::optional<int> draft_tokens;
  bool print_ids = false;
  bool no_timings = false;
  std::string json_schema;  // a file ("-": standard input)
  bool json = false;
  std::string regex;
  std::string grammar;  // a file ("-": standard input)
};

// The prompt text of --chat: one user message through the folder's chat template.
std::string chat_prompt(const std::filesystem::path& dir, const std::string& text) {
  const ChatTemplateConfig templates = ChatTemplateConfig::load(dir);
  ChatRequest request;
  request.messages.push_back({{"role", "user"}, {"content", text}});
  request.add_generation_prompt = true;
  const ChatTemplate tmpl = ChatTemplate::parse(templates.select("", false));
  return apply_chat_template(tmpl, request, templates.special_tokens);
}

// The search options the user gave, as a JSON object (the rest come from genai_config.json).
// -n: max_length is the longest prompt row plus n (checked against the context here, so the error
// names -n rather than max_length).
nlohmann::json search_options(const GenerateArgs& a, size_t batch_size, int prompt_length, int context_length) {
  nlohmann::json s = search_options_json(a.search);
  s["batch_size"] = batch_size;
  if (a.max_new_tokens) {
    ONNXLLM_CHECK(prompt_length + static_cast<int64_t>(*a.max_new_tokens) <= context_length, kInvalidArgument,
                  "generate: the prompt's ", prompt_length, " tokens plus -n ", *a.max_new_tokens,
                  " exceed the model's context length ", context_length);
    s["max_length"] = prompt_length + *a.max_new_tokens;
  }
  return s;
}

// The ids comma-separated, as --print-ids prints them.
std::string id_list(std::span<const int32_t> ids) {
  std::string line;
  for (const int32_t id : ids) {
    if (!line.empty()) line += ',';
    line += std::to_string(id);
  }
  return line;
}

int run_generate(const GenerateArgs& args, bool has_ids, bool has_prompt, bool has_chat) {
  ONNXLLM_CHECK(has_ids + has_prompt + has_chat == 1, kInvalidArgument,
                "generate: give exactly one of --ids, --prompt, --prompt-file and --chat");
  ONNXLLM_CHECK((args.prompt_file == "-") + (args.json_schema == "-") + (args.grammar == "-") <= 1, kInvalidArgument,
                "generate: only one of --prompt-file, --json-schema and --grammar can read standard input");
  // Read before the model loads, so a bad file fails at once.
  const std::string prompt = args.prompt_file.empty() ? args.prompt : read_prompt_file(args.prompt_file);
  // The guidance, as set_guidance's type and data ("": none).
  std::string guide_type, guide_data;
  if (args.json) guide_type = "json_object";
  if (!args.json_schema.empty())
    guide_type = "json_schema", guide_data = read_prompt_file(args.json_schema, kMaxPromptFileBytes, "--json-schema");
  if (!args.regex.empty()) guide_type = "regex", guide_data = args.regex;
  if (!args.grammar.empty())
    guide_type = "lark_grammar", guide_data = read_prompt_file(args.grammar, kMaxPromptFileBytes, "--grammar");
  genai::ModelOptions options;
  options.num_threads = args.threads;
  options.kv_cache_dtype = kv_cache_dtype(args.kv_cache);
  auto model = genai::Model::load(args.model, options);

  // The tokenizer is needed for text prompts and for printing text.
  std::shared_ptr<Tokenizer> tokenizer;
  const bool guided = !guide_type.empty();
  if (has_prompt || has_chat || !args.print_ids || guided) tokenizer = Tokenizer::load(model->config().tokenizer_dir());
  std::vector<std::vector<int32_t>> rows;
  if (has_ids) rows = parse_id_rows(args.ids);
  if (has_prompt) rows.push_back(tokenizer->encode(prompt, true));
  // Ids the tokenizer cannot print are the user's mistake (the model may accept them): say so
  // instead of printing empty text.
  if (has_ids && tokenizer)
    for (const auto& row : rows) check_ids_in_vocab(row, tokenizer->vocab_size(), "--ids");
  if (has_chat) rows.push_back(tokenizer->encode(chat_prompt(model->config().tokenizer_dir(), args.chat), false));
  for (const auto& row : rows)
    ONNXLLM_CHECK(!row.empty(), kInvalidArgument, "generate: the prompt has no tokens");

  size_t longest = 0;
  for (const auto& row : rows) longest = std::max(longest, row.size());

  genai::GeneratorParams params(model);
  params.set_search_options(
      search_options(args, rows.size(), static_cast<int>(longest), model->config().model.context_length).dump());
  if (guided) {
    const genai::Config& config = model->config();
    params.guidance = genai::make_guidance(guide_type, guide_data,
                                           genai::GuideVocabulary::from_tokenizer(*tokenizer, config.eos_token_ids(),
                                                                                  config.model.vocab_size));
  }
  if (args.ngram) params.set_speculative_option("ngram_size", *args.ngram);
  ONNXLLM_CHECK(!args.draft_tokens || args.ngram || model->draft(), kInvalidArgument,
                "generate: --draft-tokens needs --ngram or a model with a draft decoder (model.draft)");
  if (args.draft_tokens) params.set_speculative_option("max_draft_tokens", *args.draft_tokens);
  genai::Generator generator(params);
  GenerationTimings timings;
  generator.append_token_sequences(rows);
  // Generated tokens start after the (right-padded) prompt.
  const int prompt_length = generator.token_count();
  timings.prompt_done(prompt_length);
  const auto report = [&] {
    if (args.no_timings) return;
    timings.print(std::cerr);
    const genai::SpeculativeStats s = generator.speculative_stats();
    if (!args.ngram && s.rounds == 0) return;
    std::cerr << "speculative: " << s.rounds << " rounds, " << s.draft_tokens_accepted << " of "
              << s.draft_tokens_evaluated << " drafts accepted, " << s.standard_fallback_steps << " standard steps";
    if (s.draft_forward_passes > 0) std::cerr << ", " << s.draft_forward_passes << " draft model runs";
    std::cerr << "\n";
  };
  const auto next_token = [&] {
    generator.generate_next_token();
    timings.token();
  };

  // One sequence streams: text token by token, or with --print-ids the prompt's ids and then each
  // generated id, flushed as it comes.
  const bool stream = generator.num_sequences() == 1 && generator.get_next_tokens().size() == 1;
  if (stream && args.print_ids) {
    std::cout << id_list(generator.get_sequence(0)) << std::flush;
    while (!generator.is_done()) {
      next_token();
      std::cout << ',' << generator.get_next_tokens()[0] << std::flush;
    }
    std::cout << "\n";
    report();
    return 0;
  }
  if (stream) {
    auto decoder = tokenizer->create_stream(true);
    while (!generator.is_done()) {
      next_token();
      const int32_t id = generator.get_next_tokens()[0];
      check_ids_in_vocab({&id, 1}, tokenizer->vocab_size(), "generated text");
      std::cout << decoder->step(id) << std::flush;
    }
    std::cout << decoder->flush() << "\n";
    report();
    return 0;
  }
  while (!generator.is_done()) next_token();
  for (int i = 0; i < generator.num_sequences(); ++i) {
    const auto sequence = generator.get_sequence(i);
    if (args.print_ids) {
      std::cout << id_list(sequence) << "\n";
    } else {
      const auto generated = sequence.subspan(std::min<size_t>(prompt_length, sequence.size()));
      check_ids_in_vocab(generated, tokenizer->vocab_size(), "generated text");
      std::cout << tokenizer->decode(generated, true) << "\n";
    }
  }
  report();
  return 0;
}

}  // namespace

Command add_generate_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("generate", "Generate tokens with a model folder (genai_config.json)");
  auto args = std::make_shared<GenerateArgs>();
  add_model_option(cmd, args->model, "Model folder with genai_config.json")->required();
  auto* ids = cmd->add_option("--ids", args->ids,
                              "Prompt token ids: rows separated by ';', ids by ',' (e.g. \"0,0,0,52;0,0,195,331\")");
  // -p and -f as llama.cpp's CLI spells them.
  auto* prompt = cmd->add_option("-p,--prompt", args->prompt, "Prompt text, encoded with the model folder's tokenizer");
  auto* prompt_file = cmd->add_option("-f,--prompt-file", args->prompt_file,
                                      "File with the prompt text ('-' = standard input), as --prompt");
  auto* chat = cmd->add_option("--chat", args->chat,
                               "A user message, formatted with the model folder's chat template (generation prompt "
                               "added) and encoded with its tokenizer");
  ids->excludes(prompt)->excludes(prompt_file)->excludes(chat);
  prompt->excludes(prompt_file)->excludes(chat);
  prompt_file->excludes(chat);
  auto* max_length = add_search_options(*cmd, args->search, true);
  cmd->add_option("-n,--max-new-tokens", args->max_new_tokens,
                  "Generate at most N tokens after the prompt (max_length = longest prompt + N)")
      ->check(CLI::Range(1, std::numeric_limits<int>::max()))
      ->excludes(max_length)
      ->default_str("unset: --max-length");
  add_threads_option(cmd, args->threads, "Intra-op threads (0: the config's intra_op_num_threads if set)");
  add_kv_cache_option(cmd, args->kv_cache);
  cmd->add_option("--ngram", args->ngram,
                  "N-gram speculative decoding: drafts from the latest earlier occurrence of the last N-1 tokens, "
                  "verified in one run (2-16; the tokens are unchanged)")
      ->check(CLI::Range(2, 16));
  cmd->add_option("--draft-tokens", args->draft_tokens,
                  "With --ngram or a model with a draft decoder (model.draft): drafts per run (1-16)")
      ->check(CLI::Range(1, 16))
      ->default_str("4");
  cmd->add_flag("--print-ids", args->print_ids,
                "Print each sequence as comma-separated token ids, streamed for one sequence (default: stream the "
                "generated text)");
  cmd->add_flag("--no-timings", args->no_timings, "Do not print the timings to stderr after the run");
  auto* schema = cmd->add_option("--json-schema", args->json_schema,
                                 "File with a JSON Schema ('-' = standard input): the generated text is a JSON value "
                                 "valid against it, ending with EOS (guidance)");
  auto* json = cmd->add_flag("--json", args->json, "The generated text is a JSON object (guidance)")->excludes(schema);
  auto* regex = cmd->add_option("--regex", args->regex, "The generated text matches this regular expression (guidance)")
                    ->excludes(schema)
                    ->excludes(json);
  cmd->add_option("--grammar", args->grammar,
                  "File with a Lark grammar ('-' = standard input; llguidance's dialect, %json and <special> "
                  "tokens included): the generated text is one of its texts (guidance)")
      ->excludes(schema)
      ->excludes(json)
      ->excludes(regex);
  return {cmd, [args, ids, prompt, prompt_file, chat] {
            return run_generate(*args, ids->count() > 0, prompt->count() + prompt_file->count() > 0,
                                chat->count() > 0);
          }};
}

}  // namespace onnxllm::cli
