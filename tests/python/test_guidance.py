"""Guidance: GeneratorParams.set_guidance("json_schema" | "json_object" | "regex" | "lark_grammar",
...) on og.Generator and og.Engine, and the server's response_format. stories260K knows no JSON, so whatever it writes under
a schema shows the constraint at work: every finished reply must parse and pass Python's
`jsonschema` (the reference validator), and end with EOS as soon as the value is complete."""

import json
import re
import threading

import jsonschema
import pytest

import onnxllm as og
from test_server import chat_model, server  # noqa: F401 (fixtures: stories260K served with a chat template)

# Bounded everywhere (enums, maxLength, maxItems, integers capped by the matcher), so the value
# ends well before max_length and EOS is the only choice after it.
PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 12},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "mood": {"enum": ["happy", "sad", "sleepy", None]},
        "pets": {"type": "array", "items": {"type": "string", "maxLength": 6}, "maxItems": 3},
        "brave": {"type": "boolean"},
        "nickname": {"type": ["string", "null"], "maxLength": 5},
    },
    "required": ["name", "age", "mood", "pets"],
    "additionalProperties": False,
}

TREE = {
    "$defs": {
        "node": {
            "type": "object",
            "properties": {"v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2}},
            "required": ["v", "kids"],
        }
    },
    "$ref": "#/$defs/node",
}

# A pydantic discriminated union (oneOf whose objects start alike, told apart by "kind") and
# strings held to patterns, with a length the pattern must fit.
PETS = {
    "$defs": {
        "Cat": {"type": "object", "properties": {"kind": {"const": "cat"}, "name": {"type": "string", "pattern": "^[A-Z][a-z]{1,6}$"},
                                                  "lives": {"type": "integer", "minimum": 1, "maximum": 9}},
                "required": ["kind", "name", "lives"]},
        "Dog": {"type": "object", "properties": {"kind": {"const": "dog"}, "tag": {"type": "string", "pattern": "[0-9]{3}",
                                                                                    "maxLength": 6}},
                "required": ["kind", "tag"]}},
    "type": "object",
    "properties": {"pets": {"type": "array", "items": {"oneOf": [{"$ref": "#/$defs/Cat"}, {"$ref": "#/$defs/Dog"}],
                                                        "discriminator": {"propertyName": "kind"}}, "minItems": 1, "maxItems": 2}},
    "required": ["pets"],
}

PROMPTS = ["Once upon a time", "The little dog", "Lily and Tom went to the park"]


def guided(model, tokenizer, prompt, kind, data, max_new=200, **search):
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=len(tokenizer.encode(prompt)) + max_new, **search)
    params.set_guidance(kind, data)
    generator = og.Generator(model, params)
    ids = list(tokenizer.encode(prompt))
    generator.append_tokens(ids)
    while not generator.is_done():
        generator.generate_next_token()
    out = list(generator.get_sequence(0))[len(ids):]
    return out, tokenizer.decode(out)


@pytest.fixture(scope="module")
def stories(stories_dir):
    model = og.Model(str(stories_dir))
    return model, og.Tokenizer(model)


@pytest.mark.parametrize("schema", [PERSON, TREE, PETS], ids=["person", "tree", "pets"])
def test_generator_output_follows_the_schema(stories, schema):
    model, tokenizer = stories
    eos = 2  # stories260K's </s>
    replies = []
    for prompt in PROMPTS:
        for search in [dict(do_sample=False)] + [dict(do_sample=True, top_k=0, temperature=1.5, random_seed=s) for s in range(4)]:
            tokens, text = guided(model, tokenizer, prompt, "json_schema", json.dumps(schema), max_new=450, **search)
            assert tokens[-1] == eos, (prompt, search, text)
            value = json.loads(text)
            jsonschema.validate(value, schema)
            # Nothing after the value (json.loads refuses other text): EOS came as soon as it was complete.
            assert text == text.rstrip()
            replies.append(text)
    assert len(set(replies)) > len(PROMPTS)  # sampling explored, not one forced string


def test_each_row_of_a_batch_has_its_own_guide(stories):
    model, tokenizer = stories
    # Three prompts cut to one length (a Generator's rows share it), sampled: every row follows
    # the schema with its own guide and ends with EOS (then padding).
    prompts = [tokenizer.encode(p)[:4] for p in PROMPTS]
    params = og.GeneratorParams(model)
    params.set_search_options(batch_size=3, max_length=400, do_sample=True, top_k=0, temperature=1.2, random_seed=3)
    params.set_guidance("json_schema", json.dumps(PERSON))
    generator = og.Generator(model, params)
    generator.append_tokens([t for p in prompts for t in p])
    while not generator.is_done():
        generator.generate_next_token()
    texts = []
    for row in range(3):
        out = list(generator.get_sequence(row))[4:]
        end = out.index(2)  # EOS, then padding
        texts.append(tokenizer.decode(out[:end]))
        jsonschema.validate(json.loads(texts[-1]), PERSON)
    assert len(set(texts)) == 3


def test_unguided_output_is_not_json(stories):
    model, tokenizer = stories
    params = og.GeneratorParams(model)
    params.set_search_options(do_sample=False, max_length=40)
    generator = og.Generator(model, params)
    generator.append_tokens(tokenizer.encode(PROMPTS[0]))
    while not generator.is_done():
        generator.generate_next_token()
    with pytest.raises(json.JSONDecodeError):
        json.loads(tokenizer.decode(list(generator.get_sequence(0))[len(tokenizer.encode(PROMPTS[0])):]))


def test_json_object_mode(stories):
    model, tokenizer = stories
    # Any object: no bound on its strings, so only a finished one is checked.
    finished = 0
    for seed in range(6):
        tokens, text = guided(model, tokenizer, PROMPTS[seed % 3], "json_object", "", max_new=120, do_sample=True,
                              top_k=0, temperature=1.0, random_seed=seed)
        assert text.startswith("{")
        if tokens[-1] == 2:
            assert isinstance(json.loads(text), dict)
            finished += 1
    greedy_tokens, greedy_text = guided(model, tokenizer, PROMPTS[0], "json_object", "", max_new=120, do_sample=False)
    assert greedy_text.startswith("{")


def test_engine_requests_follow_their_own_schemas(stories):
    model, tokenizer = stories
    engine = og.Engine(model)
    schemas = [PERSON, TREE, {"type": "array", "items": {"enum": [1, 2, 3]}, "minItems": 2, "maxItems": 4}, None]
    requests = []
    for i, schema in enumerate(schemas * 2):
        params = og.GeneratorParams(model)
        params.set_search_options(do_sample=False, max_length=400)
        if schema is not None:
            params.set_guidance("json_schema", json.dumps(schema))
        request = og.Request(params)
        request.add_tokens(tokenizer.encode(PROMPTS[i % 3]))
        request.set_opaque_data((schema, []))
        requests.append(request)
    # Added from another thread while step() loops, as onnxruntime-genai's example does.
    adder = threading.Thread(target=lambda: [engine.add_request(r) for r in requests])
    adder.start()
    while adder.is_alive() or engine.has_pending_requests():
        r = engine.step()
        if r is not None:
            while r.has_unseen_tokens():
                r.get_opaque_data()[1].append(r.get_unseen_token())
    adder.join()
    for r in requests:
        schema, tokens = r.get_opaque_data()
        if schema is None:
            continue
        assert tokens[-1] == 2
        jsonschema.validate(json.loads(tokenizer.decode(tokens)), schema)
    # A guided request alone gives what it gave in the batch (greedy, its own constraint).
    alone, _ = guided(model, tokenizer, PROMPTS[0], "json_schema", json.dumps(PERSON), max_new=400 - len(tokenizer.encode(PROMPTS[0])),
                      do_sample=False)
    assert requests[0].get_opaque_data()[1] == alone


@pytest.mark.parametrize("kind, data, message", [
    ("json_schema", '{"type": "string", "pattern": "a(?=b)"}', "'pattern': regex: lookahead"),
    ("json_schema", '{"type": "number", "multipleOf": 2}', "multipleOf"),
    ("json_schema", '{"type": "number", "minimum": 3}', "integers only"),
    ("json_schema", '{"type": "object", "properties": {"a": {"type": "strin"}}}', "strin"),
    ("json_schema", '{"type": ', "JSON"),
    ("json_schema", '{"$ref": "#/$defs/missing"}', "missing"),
    ("json_schema", '{"type": "array", "items": {"$ref": "#"}, "minItems": 1}', "nests at most 32"),
    ("regex", "a(?=b)", "lookahead"),
    ("lark_grammar", "start: x", "'x' is not defined"),
    ("lark_grammar", "start: <tool_call> %json {}", "<tool_call> is not a token of this model's tokenizer"),
    ("lark_grammar", "start: a\na: \"x\" a", "recursive rules are not supported"),
    ("yaml", "{}", "unknown guidance type"),
])
def test_bad_guidance_is_a_clear_error(stories, kind, data, message):
    model, _ = stories
    params = og.GeneratorParams(model)
    with pytest.raises(Exception) as e:
        params.set_guidance(kind, data)
    assert message in str(e.value)


SEARCHES = [dict(do_sample=False)] + [dict(do_sample=True, top_k=0, temperature=1.5, random_seed=s) for s in range(4)]


def test_regex_guidance(stories):
    # Python's re (not ours) checks every reply; EOS comes once the pattern can take nothing more.
    model, tokenizer = stories
    pattern = r"(Yes|No), [a-z]+( [a-z]+){2,4}\."
    replies = set()
    for prompt in PROMPTS:
        for search in SEARCHES:
            tokens, text = guided(model, tokenizer, prompt, "regex", pattern, **search)
            assert tokens[-1] == 2, (prompt, search, text)
            assert re.fullmatch(pattern, text), (prompt, search, text)
            replies.add(text)
    assert len(replies) > len(PROMPTS)


def genai_lark_grammar(tools):
    """examples/python/common.py's get_lark_grammar(tools, text_output=True, tool_output=True,
    tool_call_start="", tool_call_end=""), as onnxruntime-genai users write it, with maxItems 2 so
    that stories260K's list of calls ends within the test's max_length."""
    schemas = []
    for tool in tools:
        f = tool["function"]
        properties = {"name": {"const": f["name"]}}
        if f["parameters"]:
            properties["parameters"] = {"type": "object", "properties": f["parameters"].get("properties", {}),
                                        "required": f["parameters"].get("required", [])}
        schemas.append({"description": f["description"], "type": "object", "properties": properties,
                        "required": ["name", "parameters"] if f["parameters"] else ["name"],
                        "additionalProperties": False})
    schema = {"x-guidance": {"whitespace_flexible": False, "key_separator": ": ", "item_separator": ", "},
              "type": "array", "items": {"anyOf": schemas}, "minItems": 1, "maxItems": 2}
    return "\n".join(["start: TEXT | functioncall", "TEXT: /[^{<](.|\\n)*/", f"functioncall: %json {json.dumps(schema)}"]), schema


TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city", "parameters": {
        "type": "object", "properties": {"city": {"type": "string", "maxLength": 10}, "unit": {"enum": ["C", "F"]}},
        "required": ["city", "unit"]}}},
    {"type": "function", "function": {"name": "get_weather_alerts", "description": "Alerts", "parameters": {
        "type": "object", "properties": {"region": {"type": "integer", "minimum": 1, "maximum": 50}}, "required": ["region"]}}},
    {"type": "function", "function": {"name": "get_time", "description": "The time", "parameters": {}}},
]


def test_lark_grammar_genai_tool_calls(stories):
    # The grammar onnxruntime-genai's examples build: free text, or a JSON list of calls whose
    # "name" tells the tools apart (the anyOf's objects start alike). A reply starting with '['
    # must be calls valid against the schema; text must not start with '{' or '<'.
    model, tokenizer = stories
    grammar, schema = genai_lark_grammar(TOOLS)
    calls = texts = 0
    for prompt in PROMPTS + ["[", "The weather"]:
        for search in SEARCHES:
            tokens, text = guided(model, tokenizer, prompt, "lark_grammar", grammar, max_new=120, **search)
            assert text and text[0] not in "{<", (prompt, search, text)
            if text.startswith("["):
                assert tokens[-1] == 2, (prompt, search, text)
                jsonschema.validate(json.loads(text), schema)
                calls += 1
            else:
                texts += 1
    assert texts > 0
    # A grammar of calls alone: every reply is a valid list of calls, some to each tool.
    only_calls = grammar.replace("start: TEXT | functioncall", "start: functioncall")
    names = set()
    for prompt in PROMPTS:
        for search in SEARCHES:
            tokens, text = guided(model, tokenizer, prompt, "lark_grammar", only_calls, max_new=200, **search)
            assert tokens[-1] == 2, (prompt, search, text)
            value = json.loads(text)
            jsonschema.validate(value, schema)
            # x-guidance's whitespace_flexible false: exactly its ": " and ", " separators.
            assert text == json.dumps(value, ensure_ascii=False), text
            names.update(call["name"] for call in value)
    assert len(names) >= 2, names


def test_guidance_with_beam_search_is_refused(stories):
    model, _ = stories
    params = og.GeneratorParams(model)
    params.set_search_options(num_beams=2, max_length=20)
    params.set_guidance("json_object", "")
    with pytest.raises(Exception, match="beam search"):
        og.Generator(model, params)


def test_server_response_format(server):
    def chat(response_format, **extra):
        return server.post("/v1/chat/completions", {"model": server.model, "max_tokens": 400,
                                                    "messages": [{"role": "user", "content": "Once upon a time"}],
                                                    "response_format": response_format, **extra})
    status, _, body = chat({"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON, "strict": True}},
                           temperature=0)
    assert status == 200, body
    choice = body["choices"][0]
    assert choice["finish_reason"] == "stop"
    jsonschema.validate(json.loads(choice["message"]["content"]), PERSON)
    # Streamed, sampled, n = 3: every choice follows the schema.
    status, _, body = chat({"type": "json_schema", "json_schema": {"name": "tree", "schema": TREE}}, n=3, seed=7,
                           temperature=1.2)
    assert status == 200, body
    for c in body["choices"]:
        assert c["finish_reason"] == "stop"
        jsonschema.validate(json.loads(c["message"]["content"]), TREE)
    status, _, body = chat({"type": "json_object"}, temperature=0, max_tokens=60)
    assert status == 200 and body["choices"][0]["message"]["content"].startswith("{")
    status, _, body = chat({"type": "text"}, temperature=0, max_tokens=8)
    assert status == 200


@pytest.mark.parametrize("response_format, param, message", [
    ({"type": "xml"}, "response_format.type", "Supported values"),
    ({"type": "json_schema"}, "response_format.json_schema", "Missing required parameter"),
    ({"type": "json_schema", "json_schema": {"schema": {}}}, "response_format.json_schema.name", "Missing"),
    ({"type": "json_schema", "json_schema": {"name": "a b", "schema": {}}}, "response_format.json_schema.name", "1 to 64"),
    ({"type": "json_schema", "json_schema": {"name": "x" * 65, "schema": {}}}, "response_format.json_schema.name", "1 to 64"),
    ({"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "string", "pattern": "(?<=x)"}}},
     "response_format.json_schema.schema", "lookbehind"),
    ({"type": "json_schema", "json_schema": {"name": "x", "schema": 5}}, "response_format.json_schema.schema", "expected"),
    ({"type": "json_schema", "json_schema": {"name": "x", "bogus": 1}}, "response_format.json_schema.bogus", "Unrecognized"),
    ({"type": "json_object", "json_schema": {}}, "response_format.json_schema", "Unrecognized"),
    ("json", "response_format", "expected an object"),
])
def test_server_bad_response_format_is_a_400(server, response_format, param, message):
    status, _, body = server.post("/v1/chat/completions", {"model": server.model, "messages": [{"role": "user", "content": "Hi"}],
                                                           "response_format": response_format})
    assert status == 400, body
    assert body["error"]["param"] == param and message in body["error"]["message"], body
    assert server.request("GET", "/health")[0] == 200
