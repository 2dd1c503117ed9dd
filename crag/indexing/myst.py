"""Markdown rendered to HTML as the page reads, MyST's roles, targets and directives as Sphinx shows them."""

from __future__ import annotations

import html
import re
from functools import cache

from markdown_it import MarkdownIt
from mdit_py_plugins.colon_fence import colon_fence_plugin
from mdit_py_plugins.myst_blocks import myst_block_plugin
from mdit_py_plugins.myst_role import myst_role_plugin

from crag.indexing.rst import ADMONITIONS, HIDDEN, VERSIONS, role_text, rst_text

# a directive's options at the top of its body: ":maxdepth: 2" lines, or a YAML block between "---"
_OPTIONS = re.compile(r"\A(?:(?:[ \t]*:[\w-]+:[^\n]*\n)+|---\n.*?\n---\n)", re.DOTALL)


def _nothing(self, tokens, idx, options, env) -> str:
    return ""


def _role(self, tokens, idx, options, env) -> str:
    return html.escape(role_text(tokens[idx].content))


def _directive(renderer, tokens, idx, options, env) -> str:
    token = tokens[idx]
    info = token.info.strip()
    if not info.startswith("{"):
        return renderer.fence(tokens, idx, options, env) if token.type == "fence" else _code(token.content)
    name, _, args = info[1:].partition("}")
    name, args, body = name.strip().lower(), args.strip(), _OPTIONS.sub("", token.content, count=1)
    if name in HIDDEN:
        return ""
    if name in VERSIONS:
        return f"<p>{html.escape(VERSIONS[name].format(args))}</p>" + _markdown().render(body)
    if name in ADMONITIONS or name == "admonition":
        label = args if name == "admonition" else f"{ADMONITIONS[name]}: {args}".rstrip()
        return f"<p>{html.escape(label.rstrip(':'))}:</p>" + _markdown().render(body)
    if name == "eval-rst":  # reStructuredText inside Markdown
        return _code(rst_text(body))
    return _code(body)  # a code block (`CODE`) or a directive of the project's own: its lines as they are


def _code(text: str) -> str:
    return f"<pre><code>{html.escape(text)}</code></pre>\n"


@cache
def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark").enable("table").use(myst_role_plugin).use(myst_block_plugin).use(colon_fence_plugin)
    for rule in ("myst_target", "myst_line_comment", "myst_block_break"):
        md.add_render_rule(rule, _nothing)
    md.add_render_rule("myst_role", _role)
    md.add_render_rule("fence", _directive)
    md.add_render_rule("colon_fence", _directive)
    return md


def render(body: str) -> str:
    return _markdown().render(body)
