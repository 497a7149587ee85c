"""A multi-turn chat on stdin: python3 chat.py -m MODEL_DIR [--template JINJA] [-n 64]

Each line is a user turn; the answer is streamed. The whole conversation goes through the chat
template (the folder's, or --template) every turn, and only the new part of the prompt is run:
the generator keeps its KV cache, rewinding to the common prefix when the template changes it.
"""

import argparse
import json
import sys

import onnxllm as og


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-m", "--model", required=True)
    parser.add_argument("--template", default=None, help="a Jinja chat template overriding the folder's")
    parser.add_argument("-n", "--max-new-tokens", type=int, default=64)
    parser.add_argument("--max-length", type=int, default=512)
    args = parser.parse_args()

    model = og.Model(args.model)
    tokenizer = og.Tokenizer(model)
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=args.max_length)
    generator = og.Generator(model, params)
    messages = []
    for line in sys.stdin:
        text = line.strip()
        if not text:
            continue
        messages.append({"role": "user", "content": text})
        prompt = tokenizer.apply_chat_template(json.dumps(messages), template_str=args.template,
                                               add_generation_prompt=True)
        ids = tokenizer.encode(prompt).tolist()
        # Keep the cached prefix the new prompt shares with what the generator holds.
        held = generator.get_sequence(0).tolist() if generator.token_count() else []
        common = 0
        while common < min(len(held), len(ids)) and held[common] == ids[common]:
            common += 1
        common = min(common, len(ids) - 1)  # at least one new token to run
        generator.rewind_to(common)
        if len(ids) + args.max_new_tokens > args.max_length:
            print("[the conversation is too long for --max-length]")
            break
        generator.append_tokens(ids[common:])
        stream = tokenizer.create_stream()
        answer = []
        print("> ", end="", flush=True)
        while not generator.is_done() and len(answer) < args.max_new_tokens:
            generator.generate_next_token()
            token = int(generator.get_next_tokens()[0])
            if token in tokenizer.eos_token_ids:
                break
            answer.append(token)
            print(stream.decode(token), end="", flush=True)
        print()
        messages.append({"role": "assistant", "content": tokenizer.decode(answer)})


if __name__ == "__main__":
    main()
