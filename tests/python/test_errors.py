"""Bad input from Python: clear exceptions naming what is wrong, never a crash."""

import gc
import json
import shutil
import subprocess

import numpy as np
import pytest
from onnx import TensorProto, helper

import onnxllm as og
from conftest import CLI, run_python


@pytest.fixture(scope="module")
def model(stories_dir):
    return og.Model(str(stories_dir))


def generator_for(model, max_length=10):
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=max_length)
    return og.Generator(model, params)


def test_missing_folder(tmp_path):
    missing = tmp_path / "no-such-model"
    with pytest.raises(RuntimeError, match="no-such-model"):
        og.Model(str(missing))
    with pytest.raises(RuntimeError, match="no-such-model"):
        og.Config(missing)  # os.PathLike works as a path


def test_wrong_types_for_paths_and_models():
    with pytest.raises(TypeError):
        og.Model(42)
    with pytest.raises(TypeError):
        og.Tokenizer("not a model")
    with pytest.raises(TypeError):
        og.GeneratorParams(None)
    with pytest.raises(ValueError, match="no model folder"):
        og.Model(og.Config(execution_provider="cpu"))


def test_unknown_provider_names_the_built_in_ones(stories_dir):
    for provider in ("cuda", "dml", "qnn"):
        config = og.Config(str(stories_dir))
        with pytest.raises(RuntimeError, match=provider) as error:
            config.append_provider(provider)
            og.Model(config)
        assert "cpu" in str(error.value)
    # The tutorial's form: the error comes when the model is created.
    with pytest.raises(RuntimeError, match="cuda") as error:
        og.Model(str(stories_dir), config=og.Config(execution_provider="cuda"))
    assert "cpu" in str(error.value)


def test_bad_tokens(model):
    generator = generator_for(model)
    with pytest.raises(TypeError, match="integers"):
        generator.append_tokens(np.array([1.0, 2.0]))
    with pytest.raises(TypeError, match="integers"):
        generator.append_tokens(["a", "b"])
    with pytest.raises(TypeError, match="integers"):
        generator.append_tokens([True, False])
    with pytest.raises(TypeError):
        generator.append_tokens(None)
    with pytest.raises(ValueError, match="outside int32"):
        generator.append_tokens(np.array([1, 2**40], dtype=np.int64))
    with pytest.raises(ValueError):
        generator.append_tokens([[1, 2], [3]])  # ragged
    with pytest.raises(RuntimeError, match="no tokens"):
        generator.append_tokens([])
    with pytest.raises(RuntimeError, match="outside the vocabulary|vocab"):
        generator.append_tokens([1, 100000])
    generator.append_tokens(np.array([1, 403], dtype=np.uint16))  # still usable, any int dtype
    assert generator.token_count() == 2


def test_bad_search_options(model):
    params = og.GeneratorParams(model)
    with pytest.raises(TypeError, match="max_length"):
        params.set_search_options(max_length="long")
    with pytest.raises(TypeError, match="max_length"):
        params.max_length = None
    with pytest.raises(ValueError, match="NaN"):
        params.temperature = float("nan")
    with pytest.raises(RuntimeError, match="no_such_option"):
        params.set_search_options(no_such_option=1)
    with pytest.raises(AttributeError):
        params.no_such_attribute = 1
    params.max_length = -5
    with pytest.raises(RuntimeError, match="max_length"):
        og.Generator(model, params)


def test_generate_after_done_and_bad_indices(model):
    generator = generator_for(model, max_length=4)
    generator.append_tokens([1, 403])
    while not generator.is_done():
        generator.generate_next_token()
    with pytest.raises(RuntimeError, match="max_length"):
        generator.generate_next_token()
    assert generator.token_count() == 4  # unchanged
    with pytest.raises(IndexError):
        generator.get_sequence(1)
    with pytest.raises(IndexError):
        generator.get_sequence(-1)
    with pytest.raises(ValueError, match="negative"):
        generator.rewind_to(-1)
    with pytest.raises(ValueError, match="more than"):
        generator.rewind_to(5)
    with pytest.raises(RuntimeError, match="nope"):
        generator.get_output("nope")
    with pytest.raises(RuntimeError):
        generator.set_logits(np.zeros(3, dtype=np.float32))  # wrong size
    with pytest.raises(TypeError):
        generator.set_logits(["x"])
    with pytest.raises(TypeError):
        generator.set_runtime_option("terminate_session", 1)


def test_tokenizer_bad_input(model):
    tokenizer = og.Tokenizer(model)
    with pytest.raises(TypeError):
        tokenizer.encode(5)
    with pytest.raises(TypeError):
        tokenizer.decode("text")
    with pytest.raises(ValueError, match="1-D"):
        tokenizer.decode([[1, 2], [3, 4]])
    with pytest.raises(RuntimeError):
        tokenizer.apply_chat_template("not json", template_str="{{ messages }}")
    with pytest.raises(RuntimeError, match="chat template"):
        tokenizer.apply_chat_template('[{"role": "user", "content": "x"}]')  # the folder has none
    with pytest.raises(TypeError):
        tokenizer.update_options(add_special_tokens=[1])
    with pytest.raises(TypeError):
        tokenizer.create_stream().decode("x")


def test_deleting_everything_in_any_order_is_safe(stories_dir):
    script = f"""
import gc, onnxllm as og
model = og.Model({str(stories_dir)!r})
tokenizer = og.Tokenizer(model)
stream = tokenizer.create_stream()
params = og.GeneratorParams(model)
params.set_search_options(max_length=20)
generator = og.Generator(model, params)
generator.append_tokens(tokenizer.encode("Once"))
logits = generator.get_logits()
del model, tokenizer, params, generator
gc.collect()
print(float(logits.max()) > -1e30, stream.decode(403) is not None)
"""
    result = run_python(script)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "True"]


def test_escape_sequences_and_bad_utf8_in_a_model_are_escaped_in_errors(stories_dir, tmp_path):
    """A node name or op type with a terminal escape sequence and bytes that are not UTF-8: the
    error names them with \\xNN escapes. Python got an empty message for the invalid UTF-8, and
    the CLI wrote the escape sequence (one that clears the screen) to the terminal."""
    node = helper.make_node("NoSuchOp", ["x"], ["y"], name="evil\x1b[31mRED")
    node.op_type = "Bad\x1b[2JOp"
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    data = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    folder = tmp_path / "evil"
    folder.mkdir()
    shutil.copy(stories_dir / "genai_config.json", folder / "genai_config.json")
    model_file = folder / json.loads((folder / "genai_config.json").read_text())["model"]["decoder"]["filename"]
    model_file.write_bytes(data.replace(b"RED", b"\xffED"))
    with pytest.raises(RuntimeError) as error:
        og.Model(str(folder))
    message = str(error.value)
    assert "Bad\\x1b[2JOp" in message and "evil\\x1b[31m\\xffED" in message, message
    assert "\x1b" not in message
    run = subprocess.run([str(CLI), "run", "-m", str(model_file)], capture_output=True)
    assert run.returncode == 1
    assert b"\x1b" not in run.stderr and b"\xff" not in run.stderr, run.stderr
    assert b"Bad\\x1b[2JOp" in run.stderr, run.stderr
    # Names `onnxllm run` prints: escaped the same way.
    node = helper.make_node("Identity", ["in\x1b[2J"], ["outQ"], name="n")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("in\x1b[2J", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("outQ", TensorProto.FLOAT, [2])])
    names = tmp_path / "names.onnx"
    names.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
                      .SerializeToString().replace(b"outQ", b"out\xff"))
    run = subprocess.run([str(CLI), "run", "-m", str(names)], capture_output=True)
    assert run.returncode == 0, run.stderr
    assert b"input  in\\x1b[2J float32[2]" in run.stdout and b"output out\\xff float32[2]" in run.stdout, run.stdout
