// The chat-template interpreter against hand-checked jinja2 behaviour (each expected string was
// confirmed with jinja2 3.1 configured as transformers configures it).
#include "genai/chat_template/chat_template.h"

#include <gtest/gtest.h>

#include <chrono>
#include <ctime>
#include <string>

#include "core/error.h"

namespace onnxllm {
namespace {

using Json = nlohmann::ordered_json;

std::string render(const std::string& source, const std::string& context = "{}",
                   const chat_template::RenderLimits& limits = {}) {
  return ChatTemplate::parse(source).render(Json::parse(context), limits);
}

// The message of the Error that parsing or rendering throws ("" if none is thrown).
std::string error_of(const std::string& source, const std::string& context = "{}",
                     const chat_template::RenderLimits& limits = {}) {
  try {
    render(source, context, limits);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_ERROR_HAS(message, part) EXPECT_NE(std::string(message).find(part), std::string::npos) << (message)

TEST(ChatTemplate, TextAndPrinting) {
  EXPECT_EQ(render("plain"), "plain");
  EXPECT_EQ(render("a{{ x }}b", R"({"x": "X"})"), "aXb");
  // Python's str(): floats keep a digit after the point, bools/None capitalized, containers as repr.
  EXPECT_EQ(render("{{ 1.0 }} {{ 1e16 }} {{ 0.1 + 0.2 }} {{ [1, 'a'] }} {{ {'a': none} }} {{ (1,) }} {{ 'it''s' }}"),
            "1.0 1e+16 0.30000000000000004 [1, 'a'] {'a': None} (1,) its");
  EXPECT_EQ(render("{{ true }} {{ none }} {{ 1e-5 }} {{ 123456789.0 }} {{ -0.0 }} {{ 2.5e-7 }}"),
            "True None 1e-05 123456789.0 -0.0 2.5e-07");
  EXPECT_EQ(render(R"({{ "it's" }} {{ ["it's", 'say "x"', 'a\nb'] }})"), R"(it's ["it's", 'say "x"', 'a\nb'])");
  EXPECT_EQ(render("[{{ missing }}]"), "[]");
}

TEST(ChatTemplate, WhitespaceControl) {
  // trim_blocks drops the newline after a block tag, lstrip_blocks the indentation before it.
  EXPECT_EQ(render("  {% if true %}\n  x\n  {% endif %}\n{# c #}\nend\n"), "  x\nend");
  EXPECT_EQ(render("a   {{- 'b' -}}   c  {%- if true -%}  d  {%- endif %}"), "abcd");
  EXPECT_EQ(render("{{ 'a' }}\n{{ 'b' }}\n"), "a\nb");  // one trailing newline is dropped
  EXPECT_EQ(render("x\n  {%+ if true %}y{% endif %}"), "x\n  y");  // `+` keeps the indentation
  EXPECT_EQ(render("{% if true +%}\nz{% endif %}"), "\nz");           // `+%}` keeps the newline
  EXPECT_EQ(render("a\r\nb\rc"), "a\nb\nc");
  EXPECT_EQ(render("{% raw %}{{ not evaluated }}{% endraw %}"), "{{ not evaluated }}");
  EXPECT_EQ(render("{{ {'a': {'b': 1}}['a'] }}"), "{'b': 1}");  // `}}` inside a dict literal
}

TEST(ChatTemplate, Arithmetic) {
  EXPECT_EQ(render("{{ 10 / 4 }} {{ 2 ** -1 }} {{ -7 // 2 }} {{ 7 % -3 }} {{ 'ab' ~ 1 ~ none }}"), "2.5 0.5 -4 -2 ab1None");
  EXPECT_EQ(render("{{ 2 ** 10 }} {{ 'ab' * 3 }} {{ [1] * 2 }} {{ 1 == 1.0 }} {{ true + 1 }} {{ 7.5 // 2 }}"),
            "1024 ababab [1, 1] True 2 3.0");
  EXPECT_EQ(render("{{ 2 ** 3 ** 2 }} {{ -2 ** 2 }} {{ 1 + 2 * 3 - 4 }}"), "64 4 3");  // jinja2: ** is left-assoc
  EXPECT_ERROR_HAS(error_of("{{ 1 / 0 }}"), "division by zero");
  EXPECT_ERROR_HAS(error_of("{{ 'a' + 1 }}"), "can only concatenate str");
  EXPECT_ERROR_HAS(error_of("{{ 9223372036854775807 + 1 }}"), "integer overflow");
}

TEST(ChatTemplate, ComparisonsAndLogic) {
  EXPECT_EQ(render("{{ 1 < 2 < 3 }}{{ 1 < 3 < 2 }}{{ 'a' in 'abc' }}{{ 'x' not in ['a'] }}{{ 1 in {1: 2} }}{{ not 0 }}"
                   "{{ 0 or 'x' }}{{ '' and 'y' }}{{ 1 if 0 else 2 }}{{ (1 if 0) is defined }}"),
            "TrueFalseTrueTrueTrueTruex2False");
  EXPECT_EQ(render("{{ [1, 2] == [1, 2] }}{{ (1, 2) == [1, 2] }}{{ {'a': 1, 'b': 2} == {'b': 2, 'a': 1} }}{{ 'b' > 'a' }}"),
            "TrueFalseTrueTrue");
  EXPECT_ERROR_HAS(error_of("{{ 1 < 'a' }}"), "'<' not supported between instances of 'int' and 'str'");
}

TEST(ChatTemplate, StringsAndSlices) {
  EXPECT_EQ(render("{{ 'a,b,,c'.split(',') }}{{ ' a  b '.split() }}{{ 'a b c'.split(' ', 1) }}{{ 'a b c'.rsplit(' ', 1) }}"
                   "{{ 'l1\\nl2\\r\\nl3'.splitlines() }}"),
            "['a', 'b', '', 'c']['a', 'b']['a', 'b c']['a b', 'c']['l1', 'l2', 'l3']");
  EXPECT_EQ(render("{{ 'Hello'.startswith('He') }}{{ 'Hello'.endswith(('x', 'lo')) }}{{ 'Hello'.replace('l', 'L') }}"
                   "{{ 'Hello'.replace('l', 'L', 1) }}{{ 'Hello'.find('l') }}{{ 'Hello'.rfind('l') }}{{ 'Hello'.count('l') }}"
                   "{{ '-'.join(['a', 'b']) }}{{ 'ab'.upper() }}{{ 'AB'.lower() }}{{ 'ab cd'.title() }}{{ 'aB'.capitalize() }}"
                   "{{ '12'.isdigit() }}{{ 'ab'.isalpha() }}{{ '  '.isspace() }}"),
            "TrueTrueHeLLoHeLlo232a-bABabAb CdAbTrueTrueTrue");
  EXPECT_EQ(render("[{{ '\\n\\nx\\n'.strip('\\n') }}][{{ 'xxay'.lstrip('x') }}][{{ 'ayyx'.rstrip('xy') }}][{{ ' a '.strip(none) }}]"),
            "[x][ay][a][a]");
  EXPECT_EQ(render("{{ 'abcdef'[1:4] }}{{ 'abcdef'[::-1] }}{{ 'abcdef'[::2] }}{{ 'abcdef'[-2:] }}{{ [1, 2, 3, 4][1::2] }}"
                   "{{ [1, 2, 3][5:] }}{{ 'héllo'[1] }}{{ 'héllo'[::-1] }}{{ [1, 2, 3][-1] }}{{ [1, 2, 3, 4, 5][-1:0:-2] }}"),
            "bcdfedcbaaceef[2, 4][]éolléh3[5, 3]");
  EXPECT_EQ(render("{{ 'ÉCOLE straße'.lower() }} {{ 'straße'.upper() }} {{ 'héllo'|length }}"), "école straße STRASSE 5");
  EXPECT_ERROR_HAS(error_of("{{ 'abc'[::0] }}"), "slice step cannot be zero");
}

TEST(ChatTemplate, Loops) {
  EXPECT_EQ(render("{% for x in 'ab' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}"
                   "{{ loop.last }}{{ loop.length }}{{ loop.previtem }}{{ loop.nextitem }}{{ loop.cycle('x', 'y') }};{% endfor %}"),
            "1021TrueFalse2bx;2110FalseTrue2ay;");
  EXPECT_EQ(render("{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 5 %}{% break %}{% endif %}"
                   "{{ i }}{% endfor %}|{% for i in [] %}x{% else %}empty{% endfor %}|"
                   "{% for i in range(6) if i is odd %}{{ i }}{{ loop.length }}{% endfor %}"),
            "0134|empty|133353");
  EXPECT_EQ(render("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{% for k in d %}{{ k }}{% endfor %}",
                   R"({"d": {"b": 1, "a": 2}})"),
            "b=1;a=2;ba");
  // A set inside a loop is local to that iteration; a namespace carries values out.
  EXPECT_EQ(render("{% set x = 1 %}{% for i in range(3) %}{% set x = x + 1 %}[{{ x }}]{% endfor %}{{ x }}"), "[2][2][2]1");
  EXPECT_EQ(render("{% set ns = namespace(c=0, items=[]) %}{% for i in range(3) %}{% set ns.c = ns.c + i %}"
                   "{% set ns.items = ns.items + [i] %}{% endfor %}{{ ns.c }}{{ ns.items }}"),
            "3[0, 1, 2]");
  EXPECT_EQ(render("{% if true %}{% set y = 3 %}{% endif %}{{ y }}"), "3");
  EXPECT_EQ(render("{{ range(1, 8, 3) | list }}{{ range(3, -1, -1) | list }}{{ range(0, 3, -1) | list }}"), "[1, 4, 7][3, 2, 1, 0][]");
}

TEST(ChatTemplate, Filters) {
  EXPECT_EQ(render("{{ '  a b  '|trim }}|{{ 'xxhixx'|trim('x') }}|{{ [3, 1, 2]|sort }}|{{ ['b', 'A', 'a']|sort }}|"
                   "{{ ['a', 'A', 'b']|unique|list }}|{{ [1, 2, 3]|reverse|list }}|{{ 'abc'|reverse }}"),
            "a b|hi|[1, 2, 3]|['A', 'a', 'b']|['a', 'b']|[3, 2, 1]|cba");
  EXPECT_EQ(render("{{ {'b': 1, 'a': 2}|dictsort }}|{{ {'b': 1, 'a': 2}|dictsort(by='value', reverse=true) }}|"
                   "{{ [1, 2, 3, 4, 5]|batch(2)|list }}|{{ [1, 2, 3]|batch(2, 'x')|list }}"),
            "[('a', 2), ('b', 1)]|[('a', 2), ('b', 1)]|[[1, 2], [3, 4], [5]]|[[1, 2], [3, 'x']]");
  EXPECT_EQ(render("{{ 'hello world'|title }}|{{ 'hELLO wORLD'|capitalize }}|{{ 'foo-bar baz(qux'|title }}|{{ 'x'|center(5) }}|"),
            "Hello World|Hello world|Foo-Bar Baz(Qux|  x  |");
  EXPECT_EQ(render("{{ '3.7'|int }}|{{ 'x'|int(7) }}|{{ '0x1f'|int(0, 16) }}|{{ '12'|float }}|{{ 2.5|round }}|{{ 3.5|round }}|"
                   "{{ 2.675|round(2) }}|{{ 2.1|round(0, 'ceil') }}|{{ -3|abs }}|{{ 5|round }}"),
            "3|7|31|12.0|2.0|4.0|2.67|3.0|3|5");
  EXPECT_EQ(render("{{ 'a\\nb\\n\\nc'|indent(2) }}|{{ 'a\\nb'|indent(2, true) }}|{{ 'a\\n\\nb'|indent('> ', blank=true) }}"),
            "a\n  b\n\n  c|  a\n  b|a\n> \n> b");
  EXPECT_EQ(render("{{ '<a href=\"x\">&\\'</a>'|e }}|{{ none|string }}|{{ [1, 2]|string }}|{{ 'aBc'|upper }}{{ 'aBc'|lower }}|"
                   "{{ 'a b c'|wordcount }}|{{ 'x'|safe }}"),
            "&lt;a href=&#34;x&#34;&gt;&amp;&#39;&lt;/a&gt;|None|[1, 2]|ABCabc|3|x");
  EXPECT_EQ(render("{{ xs|map(attribute='n')|list }}|{{ xs|map(attribute='m', default=0)|list }}|{{ ['a', 'B']|map('upper')|join(',') }}|"
                   "{{ xs|selectattr('n', 'gt', 1)|map(attribute='n')|list }}|{{ xs|rejectattr('n', 'equalto', 1)|list|length }}|"
                   "{{ [0, 1, 2, none]|select|list }}|{{ [1, 2, 3, 4]|select('odd')|list }}|{{ [1, 2, 3, 4]|reject('even')|list }}|"
                   "{{ [1, 'a', none]|select('string')|list }}|{{ [1, 'a', none]|reject('none')|list }}",
                   R"({"xs": [{"n": 1}, {"n": 2, "m": 5}, {"n": 3}]})"),
            "[1, 2, 3]|[0, 5, 0]|A,B|[2, 3]|2|[1, 2]|[1, 3]|[1, 3]|['a']|[1, 'a']");
  EXPECT_EQ(render("{{ xs|first }}{{ xs|last }}{{ xs|length }}{{ {'a': 1}|count }}{{ xs|join }}{{ xs|join(', ') }}{{ xs|sum }}"
                   "{{ xs|max }}{{ xs|min }}{{ [{'a': 2}, {'a': 1}]|max(attribute='a') }}{{ missing|default('d') }}{{ ''|default('e', true) }}",
                   R"({"xs": [3, 1, 2]})"),
            "32313123, 1, 2631{'a': 2}de");
  EXPECT_EQ(render("{{ d|items|list }}|{% for k, v in d|items %}{{ k }}={{ v }},{% endfor %}|{{ d.keys()|list }}|{{ d.values()|list }}|"
                   "{{ d.get('a') }}{{ d.get('z') }}{{ d.get('z', 9) }}",
                   R"({"d": {"b": 1, "a": 2}})"),
            "[('b', 1), ('a', 2)]|b=1,a=2,|['b', 'a']|[1, 2]|2None9");
  EXPECT_ERROR_HAS(error_of("{{ 1|nosuchfilter }}"), "no filter named 'nosuchfilter'");
}

TEST(ChatTemplate, ToJsonMatchesPythonJsonDumps) {
  const std::string ctx = R"({"x": {"b": [1, 2.5, "é\n\"", null, true], "a": 1e20, "c": {}, "d": []}})";
  EXPECT_EQ(render("{{ x|tojson }}", ctx), R"({"b": [1, 2.5, "é\n\"", null, true], "a": 1e+20, "c": {}, "d": []})");
  EXPECT_EQ(render("{{ x|tojson(indent=2) }}", ctx),
            "{\n  \"b\": [\n    1,\n    2.5,\n    \"é\\n\\\"\",\n    null,\n    true\n  ],\n  \"a\": 1e+20,\n  \"c\": {},\n  \"d\": []\n}");
  EXPECT_EQ(render("{{ x|tojson(ensure_ascii=true, sort_keys=true, separators=(',', ':')) }}", ctx),
            R"({"a":1e+20,"b":[1,2.5,"\u00e9\n\"",null,true],"c":{},"d":[]})");
  EXPECT_EQ(render("{{ '😀<>&'|tojson(ensure_ascii=true) }} {{ (1, 'a')|tojson }} {{ {1: 'x', none: 2}|tojson }}"),
            R"("\ud83d\ude00<>&" [1, "a"] {"1": "x", "null": 2})");
  EXPECT_ERROR_HAS(error_of("{{ missing|tojson }}"), "not JSON serializable");
}

TEST(ChatTemplate, Tests) {
  EXPECT_EQ(render("{{ 3 is odd }}{{ 4 is even }}{{ 9 is divisibleby 3 }}{{ 'a' is string }}{{ 1 is number }}{{ 1.5 is float }}"
                   "{{ 1 is integer }}{{ true is integer }}{{ true is boolean }}{{ none is none }}{{ {} is mapping }}{{ [] is sequence }}"
                   "{{ 'x' is iterable }}{{ x is undefined }}{{ 2 is eq 2 }}{{ 2 is equalto 3 }}{{ 3 is gt 2 }}{{ 'a' is in 'abc' }}"
                   "{{ 'abc' is lower }}{{ 'ABC' is upper }}{{ 'upper' is filter }}{{ 'odd' is test }}{{ range is callable }}"
                   "{{ x is not defined }}{{ 1 is not string }}"),
            "TrueTrueTrueTrueTrueTrueTrueFalseTrueTrueTrueTrueTrueTrueTrueFalseTrueTrueTrueTrueTrueTrueTrueTrueTrue");
}

TEST(ChatTemplate, SetMacrosCallsAndBlocks) {
  EXPECT_EQ(render("{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set t = (1, 2) %}{{ t }}{% set s %}x{{ a }}y{% endset %}[{{ s }}]"
                   "{% set u | upper %}abc{% endset %}{{ u }}"),
            "12(1, 2)[x1y]ABC");
  EXPECT_EQ(render("{% macro greet(name, greeting='Hi') %}{{ greeting }} {{ name }}!{% endmacro %}{{ greet('Ann') }}|"
                   "{{ greet('Bob', greeting='Yo') }}|{{ greet() }}|{% macro wrap() %}[{{ caller() }}]{% endmacro %}"
                   "{% call wrap() %}inner{% endcall %}|{% macro lst(xs) %}{% for x in xs %}{% call(v) each(x) %}<{{ v }}>"
                   "{% endcall %}{% endfor %}{% endmacro %}{% macro each(x) %}{{ caller(x * 2) }}{% endmacro %}{{ lst([1, 2]) }}"),
            "Hi Ann!|Yo Bob!|Hi !|[inner]|<2><4>");
  // Macros see the template's top-level variables at call time, not an enclosing loop's.
  EXPECT_EQ(render("{% macro m(a, b=2) %}{{ a }}{{ b }}{{ g }}{% endmacro %}{% set g = 7 %}{{ m(1) }}"
                   "{% for i in [1] %}{% set g = 9 %}{{ m(3, b=4) }}{% endfor %}"),
            "127347");
  // A macro defined inside a loop or macro sees the variables around its definition.
  EXPECT_EQ(render("{% for i in [1, 2] %}{% macro m() %}<{{ i }}>{% endmacro %}{{ m() }}{% endfor %}"
                   "{% macro outer(a) %}{% macro inner() %}{{ a }}{% endmacro %}{{ inner() }}{% endmacro %}{{ outer(7) }}"),
            "<1><2>7");
  // ... and one that refers to a namespace cannot be stored in one (no reference cycles).
  EXPECT_ERROR_HAS(error_of("{% for i in [1] %}{% set ns = namespace() %}{% macro m() %}{{ ns }}{% endmacro %}"
                            "{% set ns.m = m %}{% endfor %}"),
                   "a macro that refers to a namespace cannot be stored");
  EXPECT_ERROR_HAS(error_of("{% for i in [1] %}{% set ns = namespace() %}{% macro m() %}{% endmacro %}{% set l = [m] %}{% endfor %}"),
                   "cannot be stored inside a list");
  EXPECT_EQ(render("{% for x in 'aabccb' %}{% if loop.changed(x) %}{{ x }}{% endif %}{% endfor %}"), "abcb");
  EXPECT_ERROR_HAS(error_of("{% set ns = namespace() %}{% for x in [1] %}{% set ns.l = loop %}{% endfor %}{{ ns.l.changed(1) }}"),
                   "loop.changed() was called after its loop ended");
  EXPECT_EQ(render("{% filter upper %}abc{{ 'd' }}{% endfilter %}|{% with x = 5 %}{{ x }}{% endwith %}{{ x }}|"
                   "{% generation %}gen{% endgeneration %}"),
            "ABCD|5|gen");
  EXPECT_ERROR_HAS(error_of("{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}"), "takes not more than 1 argument");
  EXPECT_ERROR_HAS(error_of("{% set d = {'a': 1} %}{% set d.a = 2 %}"), "cannot assign attribute on non-namespace object");
  EXPECT_ERROR_HAS(error_of("{{ [1].append(2) }}"), "access to attribute 'append' of 'list' object is unsafe");
}

TEST(ChatTemplate, UndefinedFollowsJinja2DefaultUndefined) {
  // Printing, truth, iteration, length, defaults and `~` treat undefined as empty ...
  EXPECT_EQ(render("[{{ u }}][{% for x in u %}x{% endfor %}][{{ u|length }}][{{ u|default('d') }}][{{ u ~ 'x' }}]"
                   "[{% if u %}t{% else %}f{% endif %}][{{ u is defined }}][{{ d.missing }}][{{ u|list }}][{{ 'a' in u }}]",
                   R"({"d": {}})"),
            "[][][0][d][x][f][False][][[]][False]");
  // ... but attribute/item access on it, calling it and arithmetic are errors, as in transformers.
  EXPECT_ERROR_HAS(error_of("{{ u.a }}"), "'u' is undefined");
  EXPECT_ERROR_HAS(error_of("{{ u['a'] }}"), "'u' is undefined");
  EXPECT_ERROR_HAS(error_of("{{ u() }}"), "'u' is undefined");
  EXPECT_ERROR_HAS(error_of("{{ u + 1 }}"), "'u' is undefined");
  EXPECT_ERROR_HAS(error_of("{{ d.missing.x }}", R"({"d": {}})"), "'dict object' has no attribute 'missing'");
  EXPECT_ERROR_HAS(error_of("{{ xs[5].role }}", R"({"xs": [1]})"), "list object has no element 5");
}

TEST(ChatTemplate, ErrorsNameLineAndColumn) {
  const std::string syntax = error_of("line one\n{% for x in xs %}\n  {{ x }\n{% endfor %}");
  EXPECT_ERROR_HAS(syntax, "chat template syntax error at line 3, column 8");
  EXPECT_ERROR_HAS(error_of("{% if x %}\nno end"), "expected 'endif' to close the 'if' at line 1, column 1");
  EXPECT_ERROR_HAS(error_of("{% endfor %}"), "unexpected 'endfor'");
  EXPECT_ERROR_HAS(error_of("{% frobnicate %}"), "unknown tag 'frobnicate'");
  EXPECT_ERROR_HAS(error_of("{% include 'x' %}"), "'include' tag is not supported");
  EXPECT_ERROR_HAS(error_of("{{ 'unterminated }}"), "unterminated string");
  EXPECT_ERROR_HAS(error_of("{# never closed"), "missing end of comment tag");
  EXPECT_ERROR_HAS(error_of("{% break %}"), "'break' outside a loop");
  const std::string render_error = error_of("ok\n  {{ messages[0].content.x.y }}", R"({"messages": [{"content": "hi"}]})");
  EXPECT_ERROR_HAS(render_error, "chat template error at line 2, column");
  EXPECT_ERROR_HAS(render_error, "'str object' has no attribute 'x'");
  const std::string raised = error_of("{{ raise_exception('Conversation roles must alternate') }}");
  EXPECT_ERROR_HAS(raised, "chat template raised an exception at line 1, column 4: Conversation roles must alternate");
  try {
    render("{{ raise_exception('x') }}");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  }
}

TEST(ChatTemplate, PathologicalTemplatesHitLimitsNotTheStack) {
  EXPECT_ERROR_HAS(error_of("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"), "deeper than");
  EXPECT_ERROR_HAS(error_of("{{ range(100001)|length }}"), "range too big");
  EXPECT_EQ(render("{{ range(100000)|length }}"), "100000");
  chat_template::RenderLimits small;
  small.max_steps = 1000;
  EXPECT_ERROR_HAS(error_of("{% for i in range(100) %}{% for j in range(100) %}{% endfor %}{% endfor %}", "{}", small),
                   "more than 1000 steps");
  small.max_steps = 1'000'000;
  small.max_bytes = 1000;
  EXPECT_ERROR_HAS(error_of("{{ 'x' * 5000 }}", "{}", small), "1000-byte limit");
  EXPECT_ERROR_HAS(error_of("{% for i in range(2000) %}x{% endfor %}", "{}", small), "1000-byte limit");
  EXPECT_ERROR_HAS(error_of("{% set ns = namespace(s='x') %}{% for i in range(20) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}", "{}", small),
                   "1000-byte limit");
  // Deep nesting: parenthesized, unary and chained operators, blocks, nested values.
  EXPECT_ERROR_HAS(error_of("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}"), "nests too deeply");
  EXPECT_ERROR_HAS(error_of("{{ " + std::string(100000, '-') + "1 }}"), "nests too deeply");
  std::string chain = "{{ 1";
  for (int i = 0; i < 100000; ++i) chain += "+1";
  EXPECT_ERROR_HAS(error_of(chain + " }}"), "nests deeper than");
  std::string blocks;
  for (int i = 0; i < 500; ++i) blocks += "{% if true %}";
  EXPECT_ERROR_HAS(error_of(blocks), "nest");
  EXPECT_ERROR_HAS(error_of("{% set ns = namespace(x=[]) %}{% for i in range(1000) %}{% set ns.x = [ns.x] %}{% endfor %}"),
                   "nests deeper than");
  EXPECT_ERROR_HAS(error_of("{% set ns = namespace() %}{% set ns.self = ns %}"), "namespace cannot be stored");
  std::string deep_json;
  for (int i = 0; i < 1000; ++i) deep_json += "[";
  for (int i = 0; i < 1000; ++i) deep_json += "]";
  EXPECT_ERROR_HAS(error_of("{{ x }}", "{\"x\": " + deep_json + "}"), "nests deeper than");
}

TEST(ChatTemplate, StrftimeNowFormatsTheCurrentDate) {
  const std::string year = render("{{ strftime_now('%Y') }}");
  const auto now = std::chrono::system_clock::now();
  const int current = static_cast<int>(std::chrono::year_month_day(std::chrono::floor<std::chrono::days>(now)).year());
  EXPECT_NEAR(std::stoi(year), current, 1);  // local time vs UTC may differ around new year
  EXPECT_EQ(render("{{ strftime_now('%%') }}"), "%");
}

TEST(ChatTemplate, ApplyChatTemplateBuildsTransformersContext) {
  const ChatTemplate t = ChatTemplate::parse(
      "{{ bos_token }}|{{ tools is none }}|{{ documents is none }}|{{ add_generation_prompt }}|{{ messages|length }}|{{ eos_token }}");
  ChatRequest request;
  request.messages = Json::parse(R"([{"role": "user", "content": "x"}])");
  request.add_generation_prompt = true;
  EXPECT_EQ(apply_chat_template(t, request, Json::parse(R"({"bos_token": "<s>", "eos_token": "</s>"})")),
            "<s>|True|True|True|1|</s>");
  request.kwargs = Json::parse(R"({"eos_token": "override"})");  // kwargs win over special tokens, as in transformers
  EXPECT_EQ(apply_chat_template(t, request, Json::parse(R"({"bos_token": "<s>", "eos_token": "</s>"})")),
            "<s>|True|True|True|1|override");
  request.kwargs = Json::parse(R"({"messages": []})");
  EXPECT_THROW(apply_chat_template(t, request), Error);
  request.kwargs = nullptr;  // null kwargs == no kwargs
  EXPECT_EQ(apply_chat_template(t, request), "|True|True|True|1|");
}

}  // namespace
}  // namespace onnxllm
