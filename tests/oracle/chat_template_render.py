#!/usr/bin/python3
"""Renders chat-template cases with jinja2 set up as transformers' apply_chat_template sets it up
(transformers/utils/chat_template_utils.py: ImmutableSandboxedEnvironment with trim_blocks,
lstrip_blocks, loopcontrols and the {% generation %} tag; its own tojson; raise_exception and
strftime_now globals).

usage: /usr/bin/python3 chat_template_render.py cases.json out.json
  cases.json: {"cases": [{"template": "...", "context": {...}}, ...]}
  out.json:   {"results": [{"rendered": "..."} | {"error": "...", "kind": "syntax"|"raised"|"render"}, ...]}
Exit code 77 when jinja2 is missing (Debian: python3-jinja2).
"""
import json
import sys
from datetime import datetime

try:
    import jinja2
    from jinja2 import nodes
    from jinja2.ext import Extension, loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError:
    sys.exit(77)


class Raised(jinja2.exceptions.TemplateError):
    pass


class GenerationTag(Extension):
    """transformers' AssistantTracker without the tracking: {% generation %} renders its body."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def raise_exception(message):
    raise Raised(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def main():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[GenerationTag, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    with open(sys.argv[1], encoding="utf-8") as f:
        cases = json.load(f)["cases"]
    results = []
    compiled = {}  # many cases share a template; compiling dominates the run time
    for case in cases:
        source = case["template"]
        if source not in compiled:
            try:
                compiled[source] = env.from_string(source)
            except jinja2.exceptions.TemplateSyntaxError as e:
                compiled[source] = e
        template = compiled[source]
        if isinstance(template, jinja2.exceptions.TemplateSyntaxError):
            results.append({"error": str(template), "kind": "syntax", "line": template.lineno})
            continue
        try:
            results.append({"rendered": template.render(**case["context"])})
        except Raised as e:
            results.append({"error": str(e), "kind": "raised"})
        except Exception as e:  # UndefinedError, TypeError, SecurityError, ...: the caller sees an error
            results.append({"error": f"{type(e).__name__}: {e}", "kind": "render"})
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump({"oracle": "jinja2 " + jinja2.__version__, "results": results}, f, ensure_ascii=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
