"""A fake of the hosted chat providers' APIs (OpenAI, Anthropic, Ollama) for their real LangChain classes, on
127.0.0.1 (`tests.servers.running`): a text reply, or, where the class asks for structured output (OpenAI and
Ollama: a JSON schema; Anthropic: a forced tool call), the fields its schema names, filled from a `Script`."""

from __future__ import annotations

import json

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

REPLY = "Anna Berg was a painter."


class Script:
    """What the fake provider says: each field a schema asks for, or, with `prose` or when no schema is asked
    for, that text (else REPLY)."""

    def __init__(self) -> None:
        self.fields: dict[str, object] = {}
        self.prose: str | None = None
        self.cut = False  # the reply ran out of tokens

    def reply(self, schema: dict | None) -> tuple[dict | None, str]:
        """(the structured reply to `schema`, or None; the text reply)."""
        if schema is None or self.prose is not None:
            return None, self.prose or REPLY
        return {name: self.fields[name] for name in schema["properties"]}, ""


def fake_providers(script: Script, seen: list) -> FastAPI:
    """One app for the three APIs, answering as `script` says; `seen` gets (path, headers, body) of every request."""
    app = FastAPI()

    async def record(request: Request) -> dict:
        body = await request.json()
        seen.append((request.url.path, dict(request.headers), body))
        return body

    @app.post("/v1/chat/completions")  # OpenAI: response_format json_schema, the reply's text is the JSON
    async def openai(request: Request):
        body = await record(request)
        schema = (body.get("response_format") or {}).get("json_schema", {}).get("schema")
        fields, text = script.reply(schema)
        content = json.dumps(fields) if fields is not None else text
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "length" if script.cut else "stop",
                }
            ],
            "usage": {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10},
        }

    @app.post("/v1/messages")  # Anthropic: a tool the reply must call, its input the fields
    async def anthropic(request: Request):
        body = await record(request)
        tool = (body.get("tools") or [None])[0]
        fields, text = script.reply(tool["input_schema"] if tool else None)
        if fields is not None:
            content = [{"type": "tool_use", "id": "toolu_1", "name": tool["name"], "input": fields}]
        else:
            content = [{"type": "text", "text": text}]
        return {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": content,
            "stop_reason": "tool_use" if fields is not None else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 5, "output_tokens": 5},
        }

    @app.post("/api/chat")  # Ollama: "format" holds the JSON schema, the reply's text is the JSON
    async def ollama(request: Request):
        body = await record(request)
        schema = body.get("format") if isinstance(body.get("format"), dict) else None
        fields, text = script.reply(schema)
        done = {
            "model": body["model"],
            "created_at": "2026-01-01T00:00:00Z",
            "message": {"role": "assistant", "content": json.dumps(fields) if fields is not None else text},
            "done": True,
            "done_reason": "length" if script.cut else "stop",
            "total_duration": 1,
            "prompt_eval_count": 5,
            "eval_count": 5,
        }
        if body.get("stream", True):
            return Response(json.dumps(done) + "\n", media_type="application/x-ndjson")
        return JSONResponse(done)

    return app
