// Differential tests: real-world chat templates (tests/data/chat_templates) over several
// conversations, and small templates for language corners, rendered by onnxllm and by
//  - jinja2 configured as transformers configures it (tests/oracle/chat_template_render.py; the
//    engine apply_chat_template users run, so onnxllm must match it exactly, errors included);
//  - @huggingface/jinja (tests/oracle/chat_template_render.mjs), on the real-world templates: it
//    must match except in the listed cases where the JS port itself departs from jinja2 (it
//    joins content-part lists into strings, lacks some filters, trims none, ...).
// Each oracle's test skips with a message when the oracle is not installed.
#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>

#include <sys/wait.h>

#include "core/error.h"
#include "genai/chat_template/chat_template.h"
#include "tests/util/test_util.h"

namespace onnxllm {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

struct Case {
  std::string name;
  std::string source;
  Json context;
};

struct Outcome {
  bool ok = false;
  std::string text;  // rendered text, or the error message
  bool syntax = false;
};

std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Language corners beyond what the real templates use.
const std::vector<std::pair<std::string, std::string>> kCornerTemplates = {
    {"printing", "{{ 1.0 }} {{ 1e16 }} {{ 1e-7 }} {{ 0.1 + 0.2 }} {{ [1, 'a', none, true, 2.50] }} {{ {'k': (1,)} }} {{ 3 / 1 }}"},
    {"repr quoting", R"({{ ["it's", 'say "x"', 'both \' "', 'tab\there', 'nl\nx', '\x01', 'é'] }})"},
    {"arithmetic", "{{ 7 // -2 }} {{ -7 % 3 }} {{ 7.5 % 2 }} {{ 2 ** 0.5 }} {{ 10 / 3 }} {{ 1e308 * 10 }} {{ -(3) }} {{ +2 }}"},
    {"concat and repetition", "{{ 'a' ~ 1 ~ none ~ true ~ [1] }} {{ 'ab' * 2 }} {{ 2 * 'x' }} {{ [0] * 3 }} {{ 'x' * -1 }}"},
    {"comparison chains", "{{ 1 < 2 <= 2 < 3 }} {{ 3 > 2 > 2 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ none == none }} {{ 1 != 1.0 }}"},
    {"membership", "{{ 'lo' in 'hello' }} {{ 3 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 'z' not in {'k': 1} }} {{ 1 in (1, 2) }}"},
    {"short circuit values", "{{ 0 or '' or 'last' }} {{ 1 and 'b' }} {{ none or [] }} {{ not none }} {{ 'x' if none else 'y' }}"},
    {"slices", "{{ 'abcdef'[1:-1:2] }} {{ [0, 1, 2, 3, 4, 5][::-2] }} {{ [0, 1, 2][-10:10] }} {{ 'abc'[5:] }} {{ 'abc'[-1::-1] }}"},
    {"unicode slices", "{{ 'añb😀c'[1:4] }} {{ 'añb😀c'[::-1] }} {{ 'añb😀c'|length }} {{ 'añb😀c'[3] }} {{ 'ÀÉ'|lower }} {{ 'ß'|upper }}"},
    {"string methods", "{{ ' x '.strip() }}|{{ 'x--'.rstrip('-') }}|{{ 'a.b.c'.split('.', 1) }}|{{ 'a.b.c'.rsplit('.', 1) }}|"
                       "{{ 'a\\n\\nb'.splitlines() }}|{{ 'aXbX'.replace('X', '') }}|{{ 'ab'.replace('', '-') }}|{{ 'Hi There'.lower().title() }}"},
    {"string predicates", "{{ 'abc'.startswith(('x', 'a')) }}{{ 'abc'.endswith('bc') }}{{ 'abc'.find('z') }}{{ '123'.isdigit() }}"
                          "{{ ''.isdigit() }}{{ 'Ab'.isupper() }}{{ 'AB'.isupper() }}{{ 'x1'.isalnum() }}{{ 'abc'.count('') }}"},
    {"partition and affixes", "{{ 'a b c'.partition(' ') }}{{ 'a b c'.rpartition(' ') }}{{ 'abc'.rpartition('z') }}{{ 'abc'.partition('z') }}"
                              "{{ 'pre_x'.removeprefix('pre_') }}{{ 'x.py'.removesuffix('.py') }}{{ 'x'.removesuffix('long') }}"},
    {"empty separator", "{{ 'abc'.partition('') }}"},
    {"loop variables", "{% for x in xs %}{{ loop.index }}/{{ loop.revindex0 }}/{{ loop.first }}/{{ loop.last }}/{{ loop.previtem }}/"
                       "{{ loop.nextitem }}/{{ loop.cycle('a', 'b', 'c') }};{% endfor %}"},
    {"loop filter and else", "{% for x in xs if x > 1 %}{{ x }}:{{ loop.index }}:{{ loop.length }},{% else %}none{% endfor %}"
                             "{% for x in [] %}{% else %}empty{% endfor %}"},
    {"nested loops and scoping", "{% set outer = 'o' %}{% for a in [1, 2] %}{% set inner = a %}{% for b in 'xy' %}{{ a }}{{ b }}"
                                 "{{ loop.index }}{% set outer = b %}{% endfor %}{{ outer }}{% endfor %}{{ outer }}{{ inner }}"},
    {"break and continue", "{% for i in range(8) %}{% if i is even %}{% continue %}{% endif %}{% if i > 5 %}{% break %}{% endif %}"
                           "{{ i }}{% endfor %}"},
    {"namespace", "{% set ns = namespace(found=false, n=0) %}{% for m in messages %}{% if m.role == 'user' %}{% set ns.found = true %}"
                  "{% set ns.n = ns.n + 1 %}{% endif %}{% endfor %}{{ ns.found }}{{ ns.n }}"},
    {"set forms", "{% set a, b = 'xy' %}{{ b }}{{ a }}{% set (c, d) = [1, 2] %}{{ c + d }}{% set blk %} B {{ a }} {% endset %}[{{ blk }}]"
                  "{% set up | trim | upper %}  lo  {% endset %}[{{ up }}]"},
    {"macros", "{% macro row(k, v='-', sep=': ') %}{{ k }}{{ sep }}{{ v }};{% endmacro %}{{ row('a') }}{{ row('b', 2) }}"
               "{{ row(v=3, k='c') }}{% macro outer() %}<{{ caller('z') }}>{% endmacro %}{% call(x) outer() %}{{ x|upper }}{% endcall %}"},
    {"macro closures", "{% for i in [1, 2] %}{% macro m() %}{{ i }}{% endmacro %}{{ m() }}{% endfor %}"
                       "{% macro outer(a) %}{% macro inner() %}{{ a }}{% endmacro %}{{ inner() }}{% endmacro %}{{ outer(7) }}"
                       "{% for i in [1] %}{% set ns = namespace(a=1) %}{% macro n() %}{{ ns.a }}{% endmacro %}{% set ns.a = 2 %}"
                       "{{ n() }}{% endfor %}"},
    {"loop changed", "{% for x in [1, 1, 2, 3, 3] %}{% if loop.changed(x) %}{{ x }}{% endif %}{% endfor %}|"
                     "{% for m in messages %}{{ loop.changed(m.role) }}{{ loop.changed() }}{% endfor %}"},
    {"macro varargs and kwargs", "{% macro m(a) %}{{ a }}|{{ varargs }}|{{ kwargs }}{% endmacro %}{{ m(1, 2, 3, k=4) }}"},
    {"macro unknown keyword", "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, k=2) }}"},
    {"recursive macro", "{% macro render(v) %}{% if v is mapping %}{% for k, x in v|items %}{{ k }}({{ render(x) }}){% endfor %}"
                        "{% elif v is string %}'{{ v }}'{% else %}{{ v }}{% endif %}{% endmacro %}{{ render(tools[0]) }}"},
    {"filters 1", "{{ '  a  '|trim }}|{{ 'xhix'|trim('x') }}|{{ [3, 1, 2]|sort(reverse=true) }}|{{ ['b', 'A', 'a', 'B']|sort }}|"
                  "{{ ['b', 'A', 'a', 'B']|unique|list }}|{{ [{'n': 2}, {'n': 1}]|sort(attribute='n')|map(attribute='n')|list }}"},
    {"filters 2", "{{ xs|sum }}|{{ xs|max }}|{{ xs|min }}|{{ xs|join('+') }}|{{ xs|first }}|{{ xs|last }}|{{ xs|length }}|"
                  "{{ xs|batch(2)|list }}|{{ xs|reverse|list }}|{{ xs|select('odd')|list }}|{{ xs|map('string')|join }}"},
    {"filters 3", "{{ messages|selectattr('role', 'equalto', 'user')|map(attribute='content')|list }}|"
                  "{{ messages|rejectattr('role', 'in', ['system'])|list|length }}|{{ messages|map(attribute='name', default='?')|list }}"},
    {"filters 4", "{{ 'hello wORLD'|capitalize }}|{{ 'hello-world foo'|title }}|{{ 'a\\nb\\n\\nc'|indent(3, first=true) }}|"
                  "{{ '3.99'|int }}|{{ '1_000'|int }}|{{ 'abc'|int(-1) }}|{{ '2.5e3'|float }}|{{ 2.5|round }}|{{ 0.125|round(2) }}|"
                  "{{ 1.5|round(0, 'floor') }}|{{ -2|abs }}|{{ 'x'|center(6) }}|{{ 'aXa'|replace('a', 'b', 1) }}|{{ {'b': 1, 'a': 0}|dictsort }}"},
    {"tojson", "{{ tools|tojson }}\n{{ tools[0]|tojson(indent=2) }}\n{{ {'z': 1, 'a': [1.5, 'é', none]}|tojson(sort_keys=true) }}\n"
               "{{ 'é\\u2028\"'|tojson(ensure_ascii=true) }}\n{{ [1, [2, {}]]|tojson(indent='\\t') }}\n{{ 1e100|tojson }}{{ 3|tojson }}"},
    {"tests", "{{ 1 is number }}{{ true is number }}{{ 1 is integer }}{{ 1.0 is integer }}{{ true is boolean }}{{ 'x' is sequence }}"
              "{{ {} is sequence }}{{ none is iterable }}{{ 4 is divisibleby(2) }}{{ 'abc' is lower }}{{ 2 is gt 1 }}{{ 2 is ge(3) }}"
              "{{ 'a' is in ['a'] }}{{ none is sameas none }}{{ xs is sameas xs }}"},
    {"dict access", "{{ d.a }}{{ d['b'] }}{{ d.missing is defined }}{{ d.get('a') }}{{ d.items()|list }}{{ d.keys()|list }}{{ d|list }}"},
    {"whitespace control", "a  {%- if true %}\n  b\n  {%- endif %}  \n  {{- ' c ' -}}  \n  {# comment #}\n  d{%+ if true %} e {% endif +%}\n f"},
    {"undefined", "[{{ nope }}][{{ nope|default('d') }}][{{ nope is defined }}][{% for x in nope %}x{% endfor %}][{{ nope|length }}]"
                  "[{{ nope|list }}][{{ nope ~ '!' }}][{{ d.none_here }}][{{ nope|first }}][{{ d.get('x') }}]"},
    {"undefined attribute error", "{{ nope.attr }}"},
    {"undefined call error", "{{ nope() }}"},
    {"undefined arithmetic error", "{{ nope + 1 }}"},
    {"type error", "{{ 'a' + 1 }}"},
    {"raise_exception", "{% if messages|length > 1 %}{{ raise_exception('Only one message, got ' ~ messages|length) }}{% endif %}"},
    {"syntax error", "{% for x in xs %}{{ x }"},
    {"unknown tag", "{% frobnicate %}"},
    {"unsafe method", "{{ xs.append(1) }}"},
};

// Real-world cases where @huggingface/jinja 0.5 renders differently from jinja2 (transformers).
const std::set<std::string> kHuggingFaceJinjaDepartures = {
    "chatml.jinja / multimodal content parts",         "llama2.jinja / multimodal content parts",
    "llama3.jinja / tool call round trip",             "llama3.jinja / tool call with string arguments",
    "llama3.jinja / multimodal content parts",         "llama3.1.jinja / multimodal content parts",
    "llama3.1.jinja / builtin tools and date",         "llama3.2.jinja / multimodal content parts",
    "mistral-v0.3.jinja / multimodal content parts",   "qwen2.5.jinja / multimodal content parts",
    "qwen3.jinja / multimodal content parts",          "phi3.jinja / multimodal content parts",
    "phi3.5.jinja / multimodal content parts",         "phi4-mini.jinja / multimodal content parts",
    "deepseek-r1-distill.jinja / tool call round trip", "deepseek-r1-distill.jinja / multimodal content parts",
    "smollm2.jinja / multimodal content parts",        "zephyr.jinja / multimodal content parts",
};

std::vector<Case> build_cases(bool with_corners) {
  const fs::path data = fs::path(ONNXLLM_SOURCE_DIR) / "tests/data/chat_templates";
  const Json spec = Json::parse(read_text(data / "cases.json"));
  std::vector<Case> cases;
  for (const Json& t : spec["templates"]) {
    std::string source;
    if (t.contains("shared")) {  // a template of ../shared, not copied into the project
      const auto shared = test::shared_dir();
      if (!shared) continue;
      source = Json::parse(read_text(*shared / t["shared"].get<std::string>()))["chat_template"].get<std::string>();
    } else {
      source = read_text(data / t["file"].get<std::string>());
    }
    for (const Json& c : spec["conversations"]) {
      ChatRequest request;
      request.messages = c["messages"];
      if (c.contains("tools")) request.tools = c["tools"];
      request.add_generation_prompt = c["add_generation_prompt"].get<bool>();
      if (c.contains("kwargs")) request.kwargs = c["kwargs"];
      cases.push_back({t["file"].get<std::string>() + " / " + c["name"].get<std::string>(), source,
                       chat_context(request, t["special_tokens"])});
    }
  }
  if (!with_corners) return cases;
  const Json corner_context = {
      {"xs", {3, 1, 4, 1, 5}},
      {"d", Json::parse(R"({"a": 1, "b": "two"})")},
      {"messages", spec["conversations"][1]["messages"]},
      {"tools", spec["conversations"][4]["tools"]}};
  for (const auto& [name, source] : kCornerTemplates) cases.push_back({"corner / " + name, source, corner_context});
  return cases;
}

Outcome render_onnxllm(const Case& c) {
  Outcome o;
  ChatTemplate tmpl;
  try {
    tmpl = ChatTemplate::parse(c.source);
  } catch (const Error& e) {
    o.text = e.what();
    o.syntax = true;
    return o;
  }
  try {
    o.text = tmpl.render(c.context);
    o.ok = true;
  } catch (const Error& e) {
    o.text = e.what();
  }
  return o;
}

// Runs an oracle over all cases; nullopt (with *why) when it is not installed.
std::optional<std::vector<Outcome>> run_oracle(const std::vector<Case>& cases, bool python, std::string* why) {
  const fs::path dir = test::temp_dir(python ? "chat_template_jinja2" : "chat_template_hfjinja");
  Json in = {{"cases", Json::array()}};
  for (const Case& c : cases) in["cases"].push_back({{"template", c.source}, {"context", c.context}});
  std::ofstream(dir / "in.json", std::ios::binary) << in.dump();
  const fs::path scripts = fs::path(ONNXLLM_SOURCE_DIR) / "tests/oracle";
  std::string cmd;
  if (python) {
    cmd = "/usr/bin/python3 '" + (scripts / "chat_template_render.py").string() + "' '" + (dir / "in.json").string() + "' '" +
          (dir / "out.json").string() + "' 2>'" + (dir / "err.txt").string() + "'";
  } else {
    const fs::path oracle = fs::path(ONNXLLM_BUILD_DIR) / "oracle";
    if (!fs::exists(oracle / "node_modules/@huggingface/jinja/package.json")) {
      *why = "@huggingface/jinja is not installed in " + oracle.string() + " (run scripts/setup_oracle.sh)";
      return std::nullopt;
    }
    if (std::system("command -v node >/dev/null 2>&1") != 0) {
      *why = "node is not installed";
      return std::nullopt;
    }
    cmd = "node '" + (scripts / "chat_template_render.mjs").string() + "' '" + oracle.string() + "' '" +
          (dir / "in.json").string() + "' '" + (dir / "out.json").string() + "' 2>'" + (dir / "err.txt").string() + "'";
  }
  const int rc = std::system(cmd.c_str());
  if (python && WIFEXITED(rc) && WEXITSTATUS(rc) == 77) {
    *why = "python3-jinja2 is not installed (apt-get install python3-jinja2)";
    return std::nullopt;
  }
  if (python && WIFEXITED(rc) && WEXITSTATUS(rc) == 127) {
    *why = "/usr/bin/python3 is not installed";
    return std::nullopt;
  }
  // An installed oracle that fails is a test failure, not a skip.
  EXPECT_EQ(rc, 0) << "oracle failed: " << cmd << "\n" << read_text(dir / "err.txt");
  if (rc != 0) {
    *why = "oracle failed";
    return std::nullopt;
  }
  const Json out = Json::parse(read_text(dir / "out.json"));
  std::vector<Outcome> outcomes;
  for (const Json& r : out["results"]) {
    Outcome o;
    o.ok = r.contains("rendered");
    o.text = o.ok ? r["rendered"].get<std::string>() : r["error"].get<std::string>();
    o.syntax = r.contains("kind") && r["kind"] == "syntax";
    outcomes.push_back(o);
  }
  if (outcomes.size() != cases.size()) {
    *why = "oracle returned " + std::to_string(outcomes.size()) + " results for " + std::to_string(cases.size()) + " cases";
    return std::nullopt;
  }
  return outcomes;
}

// Same output, or both an error (a raise_exception message must come through).
bool agree(const Outcome& ours, const Outcome& oracle, bool check_raised_message) {
  if (ours.ok != oracle.ok) return false;
  if (ours.ok) return ours.text == oracle.text;
  if (oracle.syntax != ours.syntax) return false;
  return !check_raised_message || oracle.text.empty() || ours.text.find("raised an exception") == std::string::npos ||
         ours.text.find(oracle.text) != std::string::npos;
}

std::string show(const Outcome& o) { return (o.ok ? "rendered: " : "error: ") + o.text; }

TEST(ChatTemplateDifferential, MatchesJinja2AsTransformersUsesIt) {
  const std::vector<Case> cases = build_cases(true);
  std::string why;
  const auto expected = run_oracle(cases, true, &why);
  if (!expected) GTEST_SKIP() << why;
  int rendered = 0, errors = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Outcome ours = render_onnxllm(cases[i]);
    EXPECT_TRUE(agree(ours, (*expected)[i], true))
        << cases[i].name << "\n  jinja2:  " << show((*expected)[i]) << "\n  onnxllm: " << show(ours);
    ((*expected)[i].ok ? rendered : errors)++;
  }
  std::cout << "[ jinja2 ] " << cases.size() << " cases: " << rendered << " rendered, " << errors << " errors\n";
  EXPECT_GT(rendered, 150);
}

TEST(ChatTemplateDifferential, MatchesHuggingFaceJinjaOnRealTemplates) {
  const std::vector<Case> cases = build_cases(false);
  std::string why;
  const auto hf = run_oracle(cases, false, &why);
  if (!hf) GTEST_SKIP() << why;
  int compared = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    if (kHuggingFaceJinjaDepartures.count(cases[i].name)) continue;
    const Outcome ours = render_onnxllm(cases[i]);
    EXPECT_TRUE(agree(ours, (*hf)[i], false))
        << cases[i].name << "\n  @huggingface/jinja: " << show((*hf)[i]) << "\n  onnxllm:            " << show(ours);
    ++compared;
  }
  std::cout << "[ @huggingface/jinja ] " << compared << " of " << cases.size() << " cases compared\n";
}

}  // namespace
}  // namespace onnxllm
