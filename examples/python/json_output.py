"""A reply held to a JSON Schema (guidance, as onnxruntime-genai's set_guidance):
python3 json_output.py -m MODEL_DIR [-p PROMPT] [--schema FILE] [-n 300]

Prints the reply, which parses as JSON and is valid against the schema unless -n cut it short
(then a note goes to stderr and the exit code is 1)."""

import argparse
import json
import sys

import onnxllm as og

DEFAULT_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 20},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "pets": {"type": "array", "items": {"enum": ["cat", "dog", "bird"]}, "maxItems": 3},
    },
    "required": ["name", "age", "pets"],
}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-m", "--model", required=True, help="model folder (genai_config.json)")
    parser.add_argument("-p", "--prompt", default="Describe a person as JSON: ")
    parser.add_argument("--schema", help="a JSON Schema file (default: a person with a name, an age and pets)")
    parser.add_argument("-n", "--max-new-tokens", type=int, default=300)
    args = parser.parse_args()
    schema = DEFAULT_SCHEMA
    if args.schema:
        with open(args.schema) as f:
            schema = json.load(f)

    model = og.Model(args.model)
    tokenizer = og.Tokenizer(model)
    prompt = tokenizer.encode(args.prompt)
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=len(prompt) + args.max_new_tokens)
    params.set_guidance("json_schema", json.dumps(schema))  # an unsupported keyword raises here, naming it
    generator = og.Generator(model, params)
    generator.append_tokens(prompt)
    while not generator.is_done():
        generator.generate_next_token()
    reply = tokenizer.decode(generator.get_sequence(0)[len(prompt):])
    print(reply)
    try:
        json.loads(reply)
    except json.JSONDecodeError:
        print(f"the reply was cut at -n {args.max_new_tokens} tokens before its JSON value ended", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
