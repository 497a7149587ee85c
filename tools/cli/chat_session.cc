#include "tools/cli/chat_session.h"

#include <algorithm>

#include "core/error.h"
#include "genai/chat_template/chat_template_config.h"
#include "genai/tokenizer/tokenizer_stream.h"

namespace onnxllm::cli {

ChatSession::ChatSession(const std::filesystem::path& model_dir, ChatOptions options) : options_(std::move(options)) {
  genai::ModelOptions model_options;
  model_options.num_threads = options_.num_threads;
  model_options.kv_cache_dtype = options_.kv_cache_dtype;
  model_ = genai::Model::load(model_dir, model_options);
  const genai::Config& config = model_->config();
  const auto dir = config.tokenizer_dir();
  tokenizer_ = Tokenizer::load(dir);
  try {
    const ChatTemplateConfig templates = ChatTemplateConfig::load(dir);
    tmpl_ = ChatTemplate::parse(templates.select("", false));
    special_tokens_ = templates.special_tokens;
  } catch (const Error& e) {
    // No template is a supported case (plain text turns); a broken one is the user's to fix.
    if (e.code() != ErrorCode::kNotFound) throw;
  }
  nlohmann::json search = options_.search.is_null() ? nlohmann::json::object() : options_.search;
  search["batch_size"] = 1;
  ONNXLLM_CHECK(!search.contains("num_beams") || search["num_beams"] == 1, kInvalidArgument,
                "chat: beam search is not supported (the cache is kept between turns)");
  genai::GeneratorParams params(model_);
  params.set_search_options(search.dump());
  generator_ = std::make_unique<genai::Generator>(params);
  max_length_ = params.search.max_length > 0 ? params.search.max_length : model_->config().model.context_length;
  reset();
}

void ChatSession::reset() {
  messages_ = nlohmann::ordered_json::array();
  if (!options_.system.empty()) messages_.push_back({{"role", "system"}, {"content", options_.system}});
  if (generator_->token_count() > 0) generator_->rewind_to(0);
}

std::vector<int32_t> ChatSession::render() const {
  if (tmpl_) {
    ChatRequest request;
    request.messages = messages_;
    request.add_generation_prompt = true;
    // The template writes the special tokens (bos, turn markers), so the tokenizer adds none.
    return tokenizer_->encode(apply_chat_template(*tmpl_, request, special_tokens_), false);
  }
  // Plain text: an answer continues its user turn's text (that is how it was generated); other
  // messages start a new line.
  std::string text;
  for (size_t i = 0; i < messages_.size(); ++i) {
    if (i > 0 && messages_[i]["role"] != "assistant") text += '\n';
    text += messages_[i]["content"].get<std::string>();
  }
  return tokenizer_->encode(text, true);
}

ChatTurn ChatSession::send(const std::string& user_text, const std::function<void(const std::string&)>& on_text,
                           GenerationTimings& timings, const std::atomic<bool>& stop) {
  ChatTurn turn;
  messages_.push_back({{"role", "user"}, {"content", user_text}});
  try {
    turn.prompt_ids = render();
    ONNXLLM_CHECK(!turn.prompt_ids.empty(), kInvalidArgument, "chat: the message has no tokens");
    ONNXLLM_CHECK(static_cast<int>(turn.prompt_ids.size()) < max_length_, kInvalidArgument, "the conversation (",
                  turn.prompt_ids.size(), " tokens) no longer fits the context (max_length ", max_length_,
                  "): type /reset to start a new one");
  } catch (...) {
    messages_.erase(messages_.size() - 1);
    throw;
  }

  // Reuse the cached prefix; at least one token runs so that the logits belong to this prompt.
  int common = 0;
  if (generator_->token_count() > 0) {
    const auto cached = generator_->get_sequence(0);
    const size_t limit = std::min(cached.size(), turn.prompt_ids.size() - 1);
    while (static_cast<size_t>(common) < limit && cached[common] == turn.prompt_ids[common]) ++common;
    if (common < generator_->token_count()) generator_->rewind_to(common);
  }
  turn.cached_tokens = common;
  turn.new_prompt_tokens = static_cast<int>(turn.prompt_ids.size()) - common;
  try {
    generator_->append_tokens(std::span<const int32_t>(turn.prompt_ids).subspan(common));
  } catch (...) {
    // Nothing of this turn stays: the message goes, and a failed run leaves the cache unusable.
    messages_.erase(messages_.size() - 1);
    generator_->rewind_to(0);
    throw;
  }
  timings.prompt_done(turn.new_prompt_tokens);

  auto decoder = tokenizer_->create_stream(true);
  std::vector<int32_t> answer_ids;
  bool interrupted = false;
  while (!generator_->is_done()) {
    if (stop.load()) {
      interrupted = true;
      break;
    }
    if (options_.max_new_tokens > 0 && turn.new_tokens >= options_.max_new_tokens) break;
    generator_->generate_next_token();
    const int32_t id = generator_->get_next_tokens()[0];
    answer_ids.push_back(id);
    ++turn.new_tokens;
    timings.token();
    on_text(decoder->step(id));
  }
  if (const std::string rest = decoder->flush(); !rest.empty()) on_text(rest);
  if (interrupted)
    turn.end = ChatTurn::End::kInterrupted;
  else if (generator_->token_count() >= max_length_)
    turn.end = ChatTurn::End::kContextFull;
  else if (generator_->is_done())
    turn.end = ChatTurn::End::kEos;
  else
    turn.end = ChatTurn::End::kMaxNewTokens;
  turn.answer = tokenizer_->decode(answer_ids, true);
  messages_.push_back({{"role", "assistant"}, {"content", turn.answer}});
  return turn;
}

}  // namespace onnxllm::cli
