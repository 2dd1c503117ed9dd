"""Structured output by a JSON schema the reply is held to (llama.cpp's grammar from `response_format`), as
LangChain's `with_structured_output` gives it: parsed into the pydantic model, or a dict for a TypedDict or a
JSON schema, with the schema told to the run's callbacks (`ls_structured_output_format`) as a provider's is."""

from __future__ import annotations

from operator import itemgetter
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.output_parsers import JsonOutputParser, PydanticOutputParser
from langchain_core.runnables import Runnable, RunnableMap, RunnablePassthrough
from langchain_core.utils.function_calling import convert_to_json_schema
from langchain_core.utils.pydantic import is_basemodel_subclass
from pydantic import BaseModel


def held_to_schema(
    model: BaseChatModel, schema: Any, *, include_raw: bool = False, method: str | None = None
) -> Runnable:
    """`model`'s replies held to `schema` and parsed; with `include_raw`, {"raw", "parsed", "parsing_error"} as a
    provider's (a reply its token budget cut does not parse). Every `method` ("json_schema", "json_mode",
    "function_calling") is the grammar: a forced tool call would be one too, and JSON mode held to the schema
    is JSON still."""
    pydantic = isinstance(schema, type) and is_basemodel_subclass(schema)
    try:
        described = convert_to_json_schema(schema)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"structured output takes a pydantic model, a TypedDict or a JSON schema: {exc}") from exc
    # a pydantic (v2) model's grammar from its own schema, as before, so its replies stay as they were
    grammar = schema.model_json_schema() if pydantic and issubclass(schema, BaseModel) else described
    llm = model.bind(
        response_format={"type": "json_object", "schema": grammar},
        ls_structured_output_format={"kwargs": {"method": method or "json_schema"}, "schema": described},
    )
    parser = PydanticOutputParser(pydantic_object=schema) if pydantic else JsonOutputParser()
    if not include_raw:
        return llm | parser
    parsed = RunnablePassthrough.assign(parsed=itemgetter("raw") | parser, parsing_error=lambda _: None)
    unparsed = RunnablePassthrough.assign(parsed=lambda _: None)
    return RunnableMap(raw=llm) | parsed.with_fallbacks([unparsed], exception_key="parsing_error")


__all__ = ["held_to_schema"]  # what callers outside the package use
