"""The issue's tutorial script (only the import changed) on stories260K built by `onnxllm build`."""

from conftest import run_cli, run_python, tutorial_source


def test_tutorial_streams_a_story(stories_dir):
    result = run_python(tutorial_source(stories_dir))
    assert result.returncode == 0, result.stderr
    words = result.stdout.split()
    assert len(words) > 30, result.stdout  # 200 tokens of a small story model


def test_tutorial_greedy_from_bos_is_the_expected_text(stories_dir, stories_hf):
    # encode("") is just BOS, so 200 new tokens are exactly expected_greedy_200.txt.
    result = run_python(tutorial_source(stories_dir, prompt="", do_sample=False, max_length=201))
    assert result.returncode == 0, result.stderr
    assert result.stdout == (stories_hf / "expected_greedy_200.txt").read_text()


def test_tutorial_greedy_with_its_prompt_equals_the_cli(stories_dir):
    prompt = "Write a short haiku about autumn leaves:"
    result = run_python(tutorial_source(stories_dir, do_sample=False))
    assert result.returncode == 0, result.stderr
    cli = run_cli("generate", "-m", stories_dir, "--prompt", prompt, "--max-length", 200)
    assert cli.endswith("\n")
    assert result.stdout == cli[:-1]
    assert len(result.stdout) > 100
