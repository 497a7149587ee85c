"""examples/python: each script runs on stories260K and prints what the API gives in-process."""

import importlib.util
import json

import jsonschema

import onnxllm as og
from conftest import SOURCE_DIR, run_python

EXAMPLES = SOURCE_DIR / "examples/python"


def greedy_text(model_dir, prompt, new_tokens):
    model = og.Model(str(model_dir))
    tokenizer = og.Tokenizer(model)
    ids = tokenizer.encode(prompt)
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=len(ids) + new_tokens)
    generator = og.Generator(model, params)
    generator.append_tokens(ids)
    while not generator.is_done():
        generator.generate_next_token()
    return tokenizer.decode(generator.get_sequence(0)[len(ids):])


def test_generate_example(stories_dir):
    result = run_python(EXAMPLES / "generate.py", "-m", stories_dir, "-p", "Once upon a time", "-n", "40")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Once upon a time" + greedy_text(stories_dir, "Once upon a time", 40) + "\n"


def test_chat_example(stories_dir):
    template = "{% for m in messages %}{{ m['content'] }}\n{% endfor %}"
    result = run_python(EXAMPLES / "chat.py", "-m", stories_dir, "--template", template, "-n", "20",
                        stdin="Once upon a time\nThe cat\n")
    assert result.returncode == 0, result.stderr
    first = greedy_text(stories_dir, "Once upon a time\n", 20)
    assert len(first) > 10
    assert result.stdout.startswith("> " + first + "\n> "), result.stdout
    assert result.stdout.count("> ") >= 2 and len(result.stdout) > len(first) + 10


def test_json_output_example(stories_dir, tmp_path):
    result = run_python(EXAMPLES / "json_output.py", "-m", stories_dir, "-p", "Once upon a time")
    assert result.returncode == 0, result.stderr
    spec = importlib.util.spec_from_file_location("json_output", EXAMPLES / "json_output.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    jsonschema.validate(json.loads(result.stdout), example.DEFAULT_SCHEMA)
    # A schema from a file; a reply cut short says so and exits 1.
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps({"type": "object", "properties": {"story": {"type": "string"}}, "required": ["story"]}))
    cut = run_python(EXAMPLES / "json_output.py", "-m", stories_dir, "--schema", schema, "-n", "5")
    assert cut.returncode == 1 and "cut at -n 5 tokens" in cut.stderr and cut.stdout.startswith("{"), cut


def test_readme_python_snippet(stories_dir):
    readme = (SOURCE_DIR / "README.md").read_text()
    snippets = [block.split("```", 1)[0] for block in readme.split("```python\n")[1:]]
    snippets = [s for s in snippets if "import onnxllm" in s]
    assert snippets, "README.md has no Python snippet"
    for snippet in snippets:
        source = snippet.replace('"build/models/stories260K-fp32"', repr(str(stories_dir)))
        result = run_python(source)
        assert result.returncode == 0, result.stderr
        assert result.stdout == greedy_text(stories_dir, "Once upon a time", 64 - 5)
