#include "server/server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <random>
#include <thread>

#include "core/error.h"
#include "genai/chat_template/chat_template.h"
#include "genai/chat_template/chat_template_config.h"
#include "genai/engine/engine.h"
#include "genai/guidance/token_guide.h"
#include "genai/tokenizer/tokenizer.h"
#include "genai/tokenizer/tokenizer_stream.h"
#include "server/metrics.h"
#include "server/openai_protocol.h"
#include "server/tool_calls.h"

namespace onnxllm::server {
namespace {

using Json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

constexpr auto kPoll = std::chrono::milliseconds(50);
constexpr int kListenBacklog = 1024;  // pending connections the kernel holds for accept()

std::string dump(const Json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

std::string random_id(const char* prefix) {
  static std::mutex m;
  static std::mt19937_64 rng(std::random_device{}());
  std::lock_guard lock(m);
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(rng()));
  return std::string(prefix) + buf;
}

int64_t unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// One choice of a request: its engine request and the text made from its tokens so far.
struct Choice {
  std::shared_ptr<genai::Request> request;
  std::unique_ptr<TokenizerStream> stream;
  std::string text;     // final text (stop sequences cut)
  std::string held;     // decoded but held back: it may begin a stop sequence
  size_t sent = 0;      // bytes of `text` already streamed
  int tokens = 0;       // generated tokens
  std::string finish;   // "" while running; "stop", "length", "tool_calls"
  Json logprobs = Json::array();
  Json prompt_logprobs;  // echo with logprobs: the prompt's entries, taken with the first token
  size_t logprobs_sent = 0;
  size_t text_offset = 0;  // characters before the next streamed logprobs entry's token
  std::vector<int32_t> recent;  // the last few tokens: logprobs' token texts are decoded after them
  Clock::time_point last_token;
};

// Characters (code points) in UTF-8 text, as len() counts a Python string.
size_t char_count(const std::string& s) {
  size_t n = 0;
  for (const char ch : s) n += (static_cast<unsigned char>(ch) & 0xC0) != 0x80;
  return n;
}

}  // namespace

struct Server::Impl {
  Impl(const std::filesystem::path& dir, const ServerOptions& o) : options(o) {
    genai::ModelOptions mo;
    mo.num_threads = o.threads;
    mo.kv_cache_dtype = o.kv_cache_dtype;
    model = genai::Model::load(dir, mo);
    const genai::Config& config = model->config();
    tokenizer = Tokenizer::load(config.tokenizer_dir());
    // No template is allowed (/v1/chat/completions then answers 400); a broken one is an error.
    templates = ChatTemplateConfig::load(config.tokenizer_dir(), /*require_template=*/false);
    tool_format = detect_tool_call_format(templates.templates.empty() ? "" : templates.select("", true),
                                          [&](const std::string& s) { return tokenizer->encode(s, false).size() == 1; });
    genai::EngineOptions eo;
    eo.max_batch = o.max_batch;
    eo.kv_memory_bytes = o.kv_memory;
    eo.block_size = o.block_size;
    eo.max_step_tokens = std::max(512, o.max_batch);
    engine = std::make_unique<genai::Engine>(model, eo);
    name = o.model_name.empty() ? std::filesystem::absolute(dir).lexically_normal().filename().string() : o.model_name;
    if (name.empty()) name = std::filesystem::absolute(dir).lexically_normal().parent_path().filename().string();
    // A request longer than the KV pool would fail after its 200 status line went out; as vLLM
    // does, the served context is what the pool holds, and longer ones are refused up front.
    context = config.model.context_length;
    const genai::Engine::Stats es = engine->stats();
    const int64_t kv_tokens = static_cast<int64_t>(es.blocks_total) * eo.block_size;
    if (kv_tokens < context) {
      context = static_cast<int>(kv_tokens);
      std::fprintf(stderr, "onnxllm serve: the KV memory holds %d tokens, less than the model's context of %d: requests are limited to %d tokens (raise --kv-memory for more)\n",
                   context, config.model.context_length, context);
    }
    for (const int id : config.eos_token_ids()) eos.push_back(id);
    created = unix_seconds();
  }

  // The engine thread: steps while any request has work, and wakes every waiting request thread
  // after each step.
  void engine_loop() {
    while (!stopping_engine) {
      if (!engine->has_pending_requests()) {
        std::unique_lock lock(work_mutex);
        work_cv.wait_for(lock, kPoll, [&] { return stopping_engine || work_ready; });
        work_ready = false;
        continue;
      }
      try {
        engine->step();
      } catch (const std::exception& e) {
        // The engine fails requests itself; anything escaping is logged, and the loop goes on.
        std::fprintf(stderr, "onnxllm serve: engine step failed: %s\n", e.what());
        std::this_thread::sleep_for(kPoll);
      }
      {
        std::lock_guard lock(step_mutex);
        ++steps;
      }
      step_cv.notify_all();
    }
  }

  void wake_engine() {
    {
      std::lock_guard lock(work_mutex);
      work_ready = true;
    }
    work_cv.notify_one();
  }

  // Waits for the next engine step (or kPoll).
  void wait_step(uint64_t& seen) {
    std::unique_lock lock(step_mutex);
    step_cv.wait_for(lock, kPoll, [&] { return steps != seen; });
    seen = steps;
  }

  void check_auth(const httplib::Request& req) const {
    if (options.api_key.empty()) return;
    const std::string want = "Bearer " + options.api_key;
    const std::string got = req.get_header_value("Authorization");
    if (got != want)
      throw_api_error(401,
                      got.empty() ? "You didn't provide an API key. You need to provide your API key in an Authorization "
                                    "header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."
                                  : "Incorrect API key provided.",
                      "", "invalid_api_key");
  }

  // The start of the reply the server writes for the model: with tool_choice "required" or a
  // named function and a known tool-call convention, its opening (tool_call_opening), so that the
  // model writes a call (the named function is the only tool offered); else nothing, and the
  // choice is the model's. The opening counts as prompt tokens, and the reply's text starts with it.
  std::string forced_reply(const GenerationRequest& r) const {
    return r.chat && r.tool_call_required ? tool_call_opening(tool_format) : "";
  }

  // The request's prompts as token ids (one for chat), each checked against the vocabulary and
  // the context.
  std::vector<std::vector<int32_t>> prompt_ids(const GenerationRequest& r) {
    std::vector<std::vector<int32_t>> prompts;
    if (r.chat) {
      if (templates.templates.empty())
        throw_api_error(400, "This model has no chat template; use /v1/completions with a plain prompt.", "messages");
      ChatRequest cr;
      cr.messages = r.messages;
      cr.tools = r.tools;
      cr.add_generation_prompt = true;
      std::string text;
      try {
        const ChatTemplate tmpl = ChatTemplate::parse(templates.select("", !r.tools.is_null()));
        text = apply_chat_template(tmpl, cr, templates.special_tokens);
      } catch (const Error& e) {
        throw_api_error(400, std::string("The chat template could not render these messages: ") + e.what(), "messages");
      }
      prompts.push_back(tokenizer->encode(text + forced_reply(r), false));
    } else if (!r.prompt_ids.empty()) {
      prompts = r.prompt_ids;
      for (const auto& ids : prompts)
        for (const int32_t id : ids)
          if (id >= model->config().model.vocab_size)
            throw_api_error(400, "Token id " + std::to_string(id) + " in 'prompt' is outside the vocabulary.", "prompt");
    } else {
      for (const std::string& text : r.prompts) prompts.push_back(tokenizer->encode(text, true));
    }
    const char* what = r.chat ? "messages" : "prompt";
    for (const auto& ids : prompts) {
      if (ids.empty()) throw_api_error(400, "The prompt is empty.", what);
      const int n = static_cast<int>(ids.size());
      if (n >= context)
        throw_api_error(400, "This model's maximum context length is " + std::to_string(context) + " tokens. However, your " +
                                 what + " resulted in " + std::to_string(n) + " tokens.",
                        what, "context_length_exceeded");
      // Compared without a sum, and the sum quoted unsigned: max_tokens may be up to 2^63 - 1.
      if (r.max_tokens > 0 && r.max_tokens > context - n)
        throw_api_error(400, "This model's maximum context length is " + std::to_string(context) + " tokens. However, you requested " +
                                 std::to_string(static_cast<uint64_t>(n) + static_cast<uint64_t>(r.max_tokens)) + " tokens (" + std::to_string(n) +
                                 " in the " + what + ", " + std::to_string(r.max_tokens) +
                                 " in the completion). Please reduce the length.",
                        "max_tokens", "context_length_exceeded");
    }
    return prompts;
  }

  std::shared_ptr<const genai::GuideVocabulary> vocabulary() {
    std::lock_guard lock(guide_mutex);
    if (!guide_vocabulary)
      guide_vocabulary = genai::GuideVocabulary::from_tokenizer(*tokenizer, eos, model->config().model.vocab_size);
    return guide_vocabulary;
  }

  // The guidance of a request: with tool_choice "required" or a named function (and a known
  // convention), calls of its tools with valid arguments (vLLM does the same); else
  // response_format's (null for "text"), a schema it cannot follow being the client's 400.
  std::shared_ptr<const genai::TokenConstraintFactory> guidance_for(const GenerationRequest& r) {
    if (r.chat && r.tool_call_required && tool_format != ToolCallFormat::kNone) {
      const auto v = vocabulary();
      const std::string grammar =
          tool_call_grammar(tool_format, r.tools, [&](const std::string& t) { return v->special_token(t) >= 0; });
      try {
        return genai::make_guidance("lark_grammar", grammar, v);
      } catch (const Error& e) {
        // Parameters this guidance cannot follow (a keyword it does not know): the forced opening
        // alone, as before; the model writes the call.
        std::fprintf(stderr, "onnxllm serve: tool call guidance off for a request: %s\n", e.what());
      }
    }
    if (r.response_format == "text") return nullptr;
    const auto vocabulary = this->vocabulary();
    try {
      return genai::make_guidance(r.response_format, r.json_schema.dump(), vocabulary);
    } catch (const Error& e) {
      throw_api_error(400, std::string("Invalid schema for response_format: ") + e.what(), "response_format.json_schema.schema",
                      "invalid_json_schema");
    }
  }

  std::shared_ptr<genai::Request> make_request(const GenerationRequest& r, const std::vector<int32_t>& ids, int index,
                                               const std::shared_ptr<const genai::TokenConstraintFactory>& guidance) {
    genai::GeneratorParams params(model);
    params.guidance = guidance;
    Json search = {{"max_length", r.max_tokens > 0 ? static_cast<int>(ids.size()) + r.max_tokens : context},
                   {"top_k", 0},
                   {"top_p", r.top_p},
                   {"temperature", r.temperature},
                   {"do_sample", r.temperature > 0.0f}};
    if (r.seed) search["random_seed"] = static_cast<int>((static_cast<uint64_t>(*r.seed) + static_cast<uint64_t>(index)) & 0x7FFFFFFF);
    params.set_search_options(search.dump());
    auto request = std::make_shared<genai::Request>(params);
    if (r.logprobs) request->set_logprobs(r.top_logprobs);
    if (r.logprobs && r.echo) request->set_prompt_logprobs(r.top_logprobs);
    if (r.presence_penalty != 0.0f || r.frequency_penalty != 0.0f || !r.logit_bias.empty())
      request->set_logit_adjustments(r.presence_penalty, r.frequency_penalty, r.logit_bias);
    request->add_tokens(ids);
    return request;
  }

  // The text token `id` adds after `context`: decode(context + id) minus decode(context), so a
  // SentencePiece word keeps its leading space (decoding one token alone drops it, as Hugging
  // Face's decode does) and the tokens of a logprobs list spell the text. When the context's
  // text is not a prefix (a character split across tokens), the token decoded alone.
  // `before` is decode(context).
  std::string token_text(const std::vector<int32_t>& context, const std::string& before, int32_t id) const {
    std::vector<int32_t> ids = context;
    ids.push_back(id);
    const std::string after = tokenizer->decode(ids);
    if (after.size() >= before.size() && after.compare(0, before.size(), before) == 0) return after.substr(before.size());
    return tokenizer->decode(std::span<const int32_t>(&id, 1));
  }

  Json logprob_entry(const std::vector<int32_t>& context, int32_t id, const genai::TokenLogprobs& lp,
                     bool chat) const {
    const std::string before = tokenizer->decode(context);
    // Chat entries carry the token's UTF-8 bytes too, as OpenAI's do.
    auto entry = [&](int32_t token, float logprob) {
      const std::string text = token_text(context, before, token);
      Json e = {{"token", text}, {"logprob", logprob}};
      if (chat) {
        Json bytes = Json::array();
        for (const char ch : text) bytes.push_back(static_cast<unsigned char>(ch));
        e["bytes"] = bytes;
      }
      return e;
    };
    Json top = Json::array();
    for (const auto& [t, v] : lp.top) top.push_back(entry(t, v));
    Json out = entry(id, lp.logprob);
    out[chat ? "top_logprobs" : "top"] = top;
    return out;
  }

  // Appends id to a logprobs entry's context, the tokens its text is decoded after: the last four,
  // enough for a word's space and a character's bytes.
  static void remember(std::vector<int32_t>& context, int32_t id) {
    if (context.size() == 4) context.erase(context.begin());
    context.push_back(id);
  }

  // Echo with logprobs: the prompt's entries once the engine has them (with the first token, or
  // fewer when the request ended first), as OpenAI's: the first token has no logprob and no top.
  void take_prompt_logprobs(Choice& c, const std::vector<int32_t>& prompt) const {
    if (!c.prompt_logprobs.is_null() || !(c.request->has_unseen_tokens() || c.request->is_done())) return;
    const std::vector<genai::TokenLogprobs> entries = c.request->prompt_logprobs();
    c.prompt_logprobs = Json::array();
    std::vector<int32_t> context;
    for (size_t p = 0; p < prompt.size() && p <= entries.size(); ++p) {
      if (p == 0) {
        c.prompt_logprobs.push_back({{"token", token_text({}, "", prompt[0])}, {"logprob", nullptr}, {"top", nullptr}});
      } else {
        c.prompt_logprobs.push_back(logprob_entry(context, prompt[p], entries[p - 1], false));
      }
      remember(context, prompt[p]);
    }
    c.recent = context;  // the generated tokens' texts continue the prompt's
  }

  // Takes a choice's new tokens: text through the stream, EOS and stop sequences end it.
  void pump(Choice& c, const GenerationRequest& r) {
    // Whether the request is done, read before its tokens: the engine queues a request's last
    // token before it marks it done, so a request read as done has all its tokens queued. Read
    // after them, a token and the done mark that came in between were taken for a reply cut at
    // max_tokens ("length", its last tokens lost: a tool call gone, under load).
    const bool done = c.request->is_done();
    while (c.finish.empty() && c.request->has_unseen_tokens()) {
      genai::TokenLogprobs lp;
      const int32_t id = c.request->get_unseen_token(r.logprobs ? &lp : nullptr);
      ++c.tokens;
      const auto now = Clock::now();
      if (c.tokens == 1) metrics.ttft.observe(std::chrono::duration<double>(now - c.last_token).count());
      else metrics.itl.observe(std::chrono::duration<double>(now - c.last_token).count());
      c.last_token = now;
      metrics.generation_tokens.fetch_add(1, std::memory_order_relaxed);
      if (std::find(eos.begin(), eos.end(), id) != eos.end()) {
        c.finish = "stop";
        break;
      }
      if (r.logprobs) {
        c.logprobs.push_back(logprob_entry(c.recent, id, lp, r.chat));
        remember(c.recent, id);
      }
      c.held += c.stream->step(id);
      release_text(c, r);
    }
    if (c.finish.empty() && done) {
      c.held += c.stream->flush();
      release_text(c, r);
      if (c.finish.empty()) {
        c.text += c.held;
        c.held.clear();
        c.finish = "length";
      }
    }
  }

  // Moves held text to `text` up to any stop sequence; keeps back a tail that may start one.
  void release_text(Choice& c, const GenerationRequest& r) {
    size_t cut = std::string::npos;
    for (const auto& s : r.stop) cut = std::min(cut, c.held.find(s));
    if (cut != std::string::npos) {
      c.text += c.held.substr(0, cut);
      c.held.clear();
      c.finish = "stop";
      engine->remove_request(*c.request);
      return;
    }
    size_t keep = 0;
    for (const auto& s : r.stop)
      for (size_t k = std::min(s.size() - 1, c.held.size()); k > keep; --k)
        if (c.held.compare(c.held.size() - k, k, s, 0, k) == 0) {
          keep = k;
          break;
        }
    c.text += c.held.substr(0, c.held.size() - keep);
    c.held.erase(0, c.held.size() - keep);
  }

  // One generation request on its request thread: admitted, then fed tokens until every choice
  // finished (or the client is gone, which cancels it).
  struct Job {
    GenerationRequest req;
    std::vector<std::vector<int32_t>> prompts;  // token ids; chat: one
    std::vector<std::string> echoes;            // completions with echo: each prompt's text
    std::vector<Choice> choices;                // prompt p's n choices at p * n ...
    std::string id;
    int64_t created = 0;
    uint64_t seen_step = 0;
    bool admitted = false;
    bool opened = false;  // the first chunk sent: chat's role, or a completion's echoed prompt
    bool done_sent = false;
  };

  std::shared_ptr<Job> admit(GenerationRequest req) {
    auto job = std::make_shared<Job>();
    job->req = std::move(req);
    job->prompts = prompt_ids(job->req);
    if (job->req.echo)
      for (const auto& ids : job->prompts) job->echoes.push_back(tokenizer->decode(ids));
    for (const auto& [id, bias] : job->req.logit_bias)
      if (id >= model->config().model.vocab_size)
        throw_api_error(400, "Token id " + std::to_string(id) + " in 'logit_bias' is outside the vocabulary.", "logit_bias");
    const auto guidance = guidance_for(job->req);  // before admission: a bad schema holds no queue place
    job->id = random_id(job->req.chat ? "chatcmpl-" : "cmpl-");
    job->created = unix_seconds();
    {
      std::lock_guard lock(jobs_mutex);
      if (draining) throw_api_error(503, "The server is shutting down.", "", "server_shutting_down", "server_error");
      if (active_jobs + 1 > options.max_queue) {
        metrics.rejected.fetch_add(1, std::memory_order_relaxed);
        throw_api_error(429, "Too many requests are queued; retry shortly.", "", "rate_limit_exceeded");
      }
      ++active_jobs;
    }
    job->admitted = true;
    try {
      for (size_t p = 0; p < job->prompts.size(); ++p)
        for (int i = 0; i < job->req.n; ++i) {
          const auto& ids = job->prompts[p];
          Choice c;
          c.request = make_request(job->req, ids, static_cast<int>(job->choices.size()), guidance);
          c.stream = std::make_unique<TokenizerStream>(tokenizer, true);
          c.recent.assign(ids.end() - std::min<std::ptrdiff_t>(4, std::ssize(ids)), ids.end());
          c.last_token = Clock::now();
          job->choices.push_back(std::move(c));
        }
      for (auto& c : job->choices) engine->add_request(c.request);
    } catch (const Error& e) {
      finish_job(*job);
      throw_api_error(400, e.what());
    }
    metrics.prompt_tokens.fetch_add(prompt_tokens(*job) * job->req.n, std::memory_order_relaxed);
    wake_engine();
    return job;
  }

  void finish_job(Job& job) {
    for (auto& c : job.choices) engine->remove_request(*c.request);
    if (!job.admitted) return;
    job.admitted = false;
    {
      std::lock_guard lock(jobs_mutex);
      --active_jobs;
    }
    jobs_cv.notify_all();
  }

  bool all_finished(const Job& job) const {
    return std::all_of(job.choices.begin(), job.choices.end(), [](const Choice& c) { return !c.finish.empty(); });
  }

  // The prompt choice i continues (prompt p's n choices are p * n ...).
  static const std::vector<int32_t>& prompt_of(const Job& job, size_t i) {
    return job.prompts[i / static_cast<size_t>(job.req.n)];
  }

  // The echoed text of choice i's prompt (decoded once per prompt, not per choice).
  static const std::string& echo_of(const Job& job, size_t i) { return job.echoes[i / static_cast<size_t>(job.req.n)]; }

  // Each prompt once, whatever n is (as OpenAI counts).
  static int64_t prompt_tokens(const Job& job) {
    int64_t n = 0;
    for (const auto& ids : job.prompts) n += static_cast<int64_t>(ids.size());
    return n;
  }

  Json usage(const Job& job) const {
    int64_t completion = 0;
    for (const auto& c : job.choices) completion += c.tokens;
    const int64_t prompt = prompt_tokens(job);
    return {{"prompt_tokens", prompt}, {"completion_tokens", completion}, {"total_tokens", prompt + completion}};
  }

  // Final message / text of a choice (tool calls parsed when the request offered tools).
  Json final_choice(const Job& job, size_t i) const {
    const Choice& c = job.choices[i];
    std::string finish = c.finish;
    if (job.req.chat) {
      Json message = {{"role", "assistant"}, {"content", c.text}};
      if (!job.req.tools.is_null()) {
        std::string content;
        const std::string forced = forced_reply(job.req);
        Json calls = parse_tool_calls(tool_format, forced + c.text, &content,
                                      "call_" + job.id.substr(9) + "_" + std::to_string(i) + "_");
        if (!calls.empty()) {
          message["content"] = content.empty() ? Json(nullptr) : Json(content);
          message["tool_calls"] = calls;
          finish = "tool_calls";
        } else if (!forced.empty()) {
          message["content"] = content;  // the reply as written, the forced tag included
        }
      }
      Json out = {{"index", i}, {"message", message}, {"logprobs", nullptr}, {"finish_reason", finish}};
      if (job.req.logprobs) out["logprobs"] = {{"content", c.logprobs}};
      return out;
    }
    const std::string prompt = job.req.echo ? echo_of(job, i) : std::string();
    Json out = {{"index", i}, {"text", prompt + c.text}, {"logprobs", nullptr}, {"finish_reason", finish}};
    size_t offset = char_count(prompt);
    if (job.req.logprobs && !c.prompt_logprobs.is_null()) {
      Json entries = c.prompt_logprobs;
      entries.insert(entries.end(), c.logprobs.begin(), c.logprobs.end());
      offset = 0;
      out["logprobs"] = completion_logprobs(entries, &offset);
    } else if (job.req.logprobs) {
      out["logprobs"] = completion_logprobs(c.logprobs, &offset);
    }
    return out;
  }

  // The completions API's logprobs of `entries`; text_offset counts characters from *offset (the
  // text before the first entry's token), which moves past the entries' tokens, as vLLM counts.
  static Json completion_logprobs(const Json& entries, size_t* offset) {
    Json tokens = Json::array(), values = Json::array(), tops = Json::array(), offsets = Json::array();
    for (const Json& e : entries) {
      tokens.push_back(e["token"]);
      values.push_back(e["logprob"]);
      if (e["top"].is_null()) {  // an echoed prompt's first token
        tops.push_back(nullptr);
      } else {
        Json top = Json::object();
        for (const Json& t : e["top"]) top[t["token"].get<std::string>()] = t["logprob"];
        tops.push_back(top);
      }
      offsets.push_back(*offset);
      *offset += char_count(e["token"].get<std::string>());
    }
    return {{"tokens", tokens}, {"token_logprobs", values}, {"top_logprobs", tops}, {"text_offset", offsets}};
  }

  Json response(const Job& job) const {
    Json choices = Json::array();
    for (size_t i = 0; i < job.choices.size(); ++i) choices.push_back(final_choice(job, i));
    return {{"id", job.id},
            {"object", job.req.chat ? "chat.completion" : "text_completion"},
            {"created", job.created},
            {"model", name},
            {"choices", choices},
            {"usage", usage(job)}};
  }

  Json chunk(const Job& job, Json choices) const {
    Json out = {{"id", job.id},
                {"object", job.req.chat ? "chat.completion.chunk" : "text_completion"},
                {"created", job.created},
                {"model", name},
                {"choices", std::move(choices)}};
    if (job.req.include_usage) out["usage"] = nullptr;
    return out;
  }

  // New streamed events of a job: text deltas per choice, then each choice's finish.
  std::string stream_events(Job& job) {
    std::string out;
    auto event = [&](const Json& j) { out += "data: " + dump(j) + "\n\n"; };
    if (!job.opened && (job.req.chat || job.req.echo)) {
      // An echo with logprobs opens with the prompt's entries, known with the first tokens.
      if (job.req.echo && job.req.logprobs &&
          std::any_of(job.choices.begin(), job.choices.end(), [](const Choice& c) { return c.prompt_logprobs.is_null(); }))
        return out;
      Json choices = Json::array();
      for (size_t i = 0; i < job.choices.size(); ++i) {
        if (job.req.chat) {
          choices.push_back({{"index", i}, {"delta", {{"role", "assistant"}, {"content", ""}}}, {"logprobs", nullptr}, {"finish_reason", nullptr}});
        } else {
          const std::string& prompt = echo_of(job, i);
          Json choice = {{"index", i}, {"text", prompt}, {"logprobs", nullptr}, {"finish_reason", nullptr}};
          if (job.req.logprobs) {
            size_t offset = 0;
            choice["logprobs"] = completion_logprobs(job.choices[i].prompt_logprobs, &offset);
          }
          choices.push_back(choice);
          job.choices[i].text_offset = char_count(prompt);
        }
      }
      event(chunk(job, choices));
    }
    job.opened = true;
    const bool tools = job.req.chat && !job.req.tools.is_null();
    for (size_t i = 0; i < job.choices.size(); ++i) {
      Choice& c = job.choices[i];
      if (c.sent == SIZE_MAX) continue;
      // With tools, the text is held until the end: it may be a tool call.
      if (!tools && c.text.size() > c.sent) {
        const std::string delta = c.text.substr(c.sent);
        c.sent = c.text.size();
        Json choice = job.req.chat ? Json{{"index", i}, {"delta", {{"content", delta}}}, {"logprobs", nullptr}, {"finish_reason", nullptr}}
                                   : Json{{"index", i}, {"text", delta}, {"logprobs", nullptr}, {"finish_reason", nullptr}};
        if (job.req.logprobs && c.logprobs.size() > c.logprobs_sent) {
          Json part(c.logprobs.begin() + static_cast<std::ptrdiff_t>(c.logprobs_sent), c.logprobs.end());
          c.logprobs_sent = c.logprobs.size();
          choice["logprobs"] = job.req.chat ? Json{{"content", part}} : completion_logprobs(part, &c.text_offset);
        }
        event(chunk(job, Json::array({choice})));
      }
      if (!c.finish.empty()) {
        Json choice;
        if (job.req.chat) {
          const Json final = final_choice(job, i);
          Json delta = Json::object();
          if (tools) {
            if (final["message"].contains("tool_calls")) {
              Json calls = final["message"]["tool_calls"];
              for (size_t k = 0; k < calls.size(); ++k) calls[k]["index"] = k;
              delta["tool_calls"] = calls;
              if (!final["message"]["content"].is_null()) delta["content"] = final["message"]["content"];
            } else if (!c.text.empty()) {
              delta["content"] = c.text;
            }
          }
          choice = {{"index", i}, {"delta", delta}, {"logprobs", nullptr}, {"finish_reason", final["finish_reason"]}};
        } else {
          choice = {{"index", i}, {"text", ""}, {"logprobs", nullptr}, {"finish_reason", c.finish}};
        }
        event(chunk(job, Json::array({choice})));
        c.sent = SIZE_MAX;
      }
    }
    if (all_finished(job) && !job.done_sent) {
      if (job.req.include_usage) {
        Json last = chunk(job, Json::array());
        last["usage"] = usage(job);
        event(last);
      }
      out += "data: [DONE]\n\n";
      job.done_sent = true;
    }
    return out;
  }

  void handle_generation(const httplib::Request& req, httplib::Response& res, bool chat) {
    check_auth(req);
    GenerationRequest parsed = chat ? parse_chat_request(req.body) : parse_completion_request(req.body);
    if (parsed.model != name)
      throw_api_error(404, "The model `" + parsed.model + "` does not exist (this server serves `" + name + "`).", "model",
                      "model_not_found");
    std::shared_ptr<Job> job = admit(std::move(parsed));
    if (job->req.stream) res.set_header("Cache-Control", "no-cache");
    // Streamed or not, the body goes through a chunked provider, so that the connection is polled
    // while the request waits: a client that leaves cancels it.
    res.set_chunked_content_provider(
        job->req.stream ? "text/event-stream" : "application/json",
        [this, job](size_t, httplib::DataSink& sink) {
          for (;;) {
            if (!sink.is_writable()) return cancel(*job);
            for (size_t i = 0; i < job->choices.size(); ++i) {
              if (job->req.echo && job->req.logprobs) take_prompt_logprobs(job->choices[i], prompt_of(*job, i));
              pump(job->choices[i], job->req);
            }
            bool last = false;
            const std::string out = next_output(*job, &last);
            if (!out.empty() && !sink.write(out.data(), out.size())) return cancel(*job);
            if (last) {
              finish_job(*job);
              sink.done();
              return true;
            }
            if (out.empty()) wait_step(job->seen_step);
          }
        },
        [this, job](bool) { finish_job(*job); });
  }

  bool cancel(Job& job) {
    metrics.cancelled.fetch_add(1, std::memory_order_relaxed);
    finish_job(job);
    return false;
  }

  // What the job sends next: stream events, or the whole response once every choice finished
  // (empty: nothing yet); *last once it is complete. A failed engine request ends it with an error
  // in OpenAI's shape (the status line has gone out already).
  std::string next_output(Job& job, bool* last) {
    if (const std::string err = first_error(job); !err.empty()) {
      ApiError e;
      e.status = 500;
      e.type = "server_error";
      e.message = "The request failed: " + err;
      *last = true;
      return job.req.stream ? "data: " + e.json() + "\n\n" : e.json();
    }
    if (job.req.stream) {
      std::string events = stream_events(job);
      *last = job.done_sent;
      return events;
    }
    if (!all_finished(job)) return {};
    *last = true;
    return dump(response(job));
  }

  std::string first_error(const Job& job) const {
    for (const auto& c : job.choices)
      if (c.finish.empty()) {
        std::string e = c.request->error();
        if (!e.empty()) return e;
      }
    return {};
  }

  std::string metrics_text() const {
    const genai::Engine::Stats s = engine->stats();
    int active;
    {
      std::lock_guard lock(jobs_mutex);
      active = active_jobs;
    }
    return metrics.render(s, active);
  }

  ServerOptions options;
  std::shared_ptr<const genai::Model> model;
  std::shared_ptr<Tokenizer> tokenizer;
  ChatTemplateConfig templates;  // empty without a chat template
  ToolCallFormat tool_format = ToolCallFormat::kNone;  // how the model writes tool calls (above)
  std::unique_ptr<genai::Engine> engine;
  std::string name;
  int context = 0;
  std::vector<int32_t> eos;
  std::mutex guide_mutex;
  std::shared_ptr<const genai::GuideVocabulary> guide_vocabulary;  // built for the first response_format request
  int64_t created = 0;
  Metrics metrics;

  httplib::Server http;
  int bound_port = -1;
  socket_t listen_socket = INVALID_SOCKET;  // set by the socket options hook at bind
  std::thread engine_thread;
  std::atomic<bool> stopping_engine{false};
  std::mutex work_mutex;
  std::condition_variable work_cv;
  bool work_ready = false;
  std::mutex step_mutex;
  std::condition_variable step_cv;
  uint64_t steps = 0;
  mutable std::mutex jobs_mutex;
  std::condition_variable jobs_cv;
  int active_jobs = 0;
  bool draining = false;
  std::once_flag stop_once;
};

Server::Server(const std::filesystem::path& model_dir, const ServerOptions& options)
    : impl_(std::make_unique<Impl>(model_dir, options)) {
  ONNXLLM_CHECK(options.max_queue >= 1, kInvalidArgument, "max_queue must be at least 1, got ", options.max_queue);
  Impl& s = *impl_;
  // Every streaming connection holds a thread while it waits for tokens.
  const size_t threads = static_cast<size_t>(options.max_queue) + 16;
  s.http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  s.http.set_payload_max_length(options.max_body_bytes);
  // Reading a request: 10 s at most between bytes. A connection that stops halfway (or announces
  // a body it never sends) holds one of the threads until then: with 60 s, 300 such connections
  // kept /health waiting 39-50 s.
  s.http.set_read_timeout(10, 0);
  s.http.set_write_timeout(60, 0);
  s.http.set_keep_alive_max_count(1000);
  // Debian's cpp-httplib listens with a backlog of 5 (compiled into the library): a burst of new
  // connections while the machine is busy overflows it, and a connection the kernel then drops is
  // reset when its request arrives (the likely cause of 3 of 24 chaos clients reset under ctest
  // load; not reproduced on demand). The hook keeps the listening socket, whose backlog bind()
  // raises (listen() again sets it).
  s.http.set_socket_options([&s](socket_t sock) {
    httplib::default_socket_options(sock);
    s.listen_socket = sock;
  });

  auto json_error = [](httplib::Response& res, const ApiError& e) {
    res.status = e.status;
    if (e.status == 429) res.set_header("Retry-After", "1");
    res.set_content(e.json(), "application/json");
  };
  auto guarded = [&s, json_error](auto&& fn) {
    return [&s, json_error, fn](const httplib::Request& req, httplib::Response& res) {
      try {
        fn(req, res);
        // A body sent by a content provider has its status (200) set after the handler returns.
        s.metrics.count_response(req.path, res.status == -1 ? 200 : res.status);
      } catch (const ApiError& e) {
        json_error(res, e);
        s.metrics.count_response(req.path, e.status);
      } catch (const std::exception& e) {
        ApiError err;
        err.status = 500;
        err.type = "server_error";
        err.message = std::string("Internal error: ") + e.what();
        json_error(res, err);
        s.metrics.count_response(req.path, 500);
      }
    };
  };
  // Before a body is read: a Content-Length that is not a number, or announces more than the
  // limit, is answered at once and the connection closed (the library would wait for the bytes,
  // to skip them, for up to the read timeout).
  const size_t max_body = options.max_body_bytes;
  s.http.set_pre_routing_handler([json_error, max_body](const httplib::Request& req, httplib::Response& res) {
    const size_t lengths = req.get_header_value_count("Content-Length");
    if (lengths == 0) return httplib::Server::HandlerResponse::Unhandled;
    const std::string value = req.get_header_value("Content-Length");
    ApiError e;
    e.status = 400;
    if (lengths > 1) {
      e.message = "The request has more than one Content-Length header.";
    } else if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos) {
      e.message = "Invalid Content-Length: '" + value.substr(0, 32) + "'.";
    } else if (value.size() > 19 || std::stoull(value) > max_body) {
      e.status = 413;
      e.message = "The request body is too large (" + value.substr(0, 32) + " bytes; at most " + std::to_string(max_body) + ").";
    } else {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    json_error(res, e);
    res.set_header("Connection", "close");
    return httplib::Server::HandlerResponse::Handled;
  });
  s.http.Post("/v1/chat/completions", guarded([&s](const httplib::Request& req, httplib::Response& res) {
                s.handle_generation(req, res, true);
              }));
  s.http.Post("/v1/completions", guarded([&s](const httplib::Request& req, httplib::Response& res) {
                s.handle_generation(req, res, false);
              }));
  s.http.Get("/v1/models", guarded([&s](const httplib::Request& req, httplib::Response& res) {
               s.check_auth(req);
               const Json model = {{"id", s.name}, {"object", "model"}, {"created", s.created}, {"owned_by", "onnxllm"}};
               res.set_content(dump({{"object", "list"}, {"data", Json::array({model})}}), "application/json");
             }));
  s.http.Get(R"(/v1/models/(.+))", guarded([&s](const httplib::Request& req, httplib::Response& res) {
               s.check_auth(req);
               if (req.matches[1] != s.name)
                 throw_api_error(404, "The model `" + std::string(req.matches[1]) + "` does not exist.", "model", "model_not_found");
               res.set_content(dump({{"id", s.name}, {"object", "model"}, {"created", s.created}, {"owned_by", "onnxllm"}}),
                               "application/json");
             }));
  s.http.Get("/health", [&s](const httplib::Request&, httplib::Response& res) {
    bool draining;
    {
      std::lock_guard lock(s.jobs_mutex);
      draining = s.draining;
    }
    res.status = draining ? 503 : 200;
    res.set_content(draining ? R"({"status":"draining"})" : R"({"status":"ok"})", "application/json");
  });
  s.http.Get("/metrics", [&s](const httplib::Request&, httplib::Response& res) {
    res.set_content(s.metrics_text(), "text/plain; version=0.0.4");
  });
  // Anything else (unknown paths, wrong methods, bodies over the limit): OpenAI's error shape.
  s.http.set_error_handler([json_error](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    ApiError e;
    e.status = res.status;
    if (res.status == 404) {
      e.type = "invalid_request_error";
      e.message = "Unknown request URL: " + req.method + " " + req.path + ".";
    } else if (res.status == 413) {
      e.message = "The request body is too large.";
    } else if (res.status == 405) {
      e.message = "Method " + req.method + " is not allowed for " + req.path + ".";
    } else {
      e.message = "HTTP error " + std::to_string(res.status) + ".";
    }
    json_error(res, e);
  });
}

Server::~Server() {
  stop();
  impl_->stopping_engine = true;
  impl_->work_cv.notify_all();
  if (impl_->engine_thread.joinable()) impl_->engine_thread.join();
}

int Server::bind() {
  Impl& s = *impl_;
  if (s.options.port == 0) {
    s.bound_port = s.http.bind_to_any_port(s.options.host);
  } else {
    s.bound_port = s.http.bind_to_port(s.options.host, s.options.port) ? s.options.port : -1;
  }
  ONNXLLM_CHECK(s.bound_port > 0, kRuntime, "cannot listen on ", s.options.host, ":", s.options.port,
                " (address in use, or not an address of this machine)");
  // Capped by the kernel at net.core.somaxconn; a failure leaves the library's backlog.
  if (s.listen_socket != INVALID_SOCKET) ::listen(s.listen_socket, kListenBacklog);
  return s.bound_port;
}

void Server::listen() {
  Impl& s = *impl_;
  if (s.bound_port <= 0) bind();
  s.engine_thread = std::thread([&s] { s.engine_loop(); });
  s.http.listen_after_bind();
}

void Server::stop() {
  Impl& s = *impl_;
  std::call_once(s.stop_once, [&s] {
    std::unique_lock lock(s.jobs_mutex);
    s.draining = true;
    s.jobs_cv.wait_for(lock, std::chrono::duration<double>(s.options.drain_seconds), [&s] { return s.active_jobs == 0; });
    lock.unlock();
    s.http.stop();
  });
}

int Server::port() const { return impl_->bound_port; }

}  // namespace onnxllm::server
