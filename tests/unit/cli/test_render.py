"""What the terminal shows when the answer is not the model's own words: withheld, or a strip quoted
instead. The streamed view has already printed the model's words, so it must end on the answer that stands."""

from __future__ import annotations

import json

from crag.cli.render import StreamPrinter, event_line, print_run, show, stream_run
from crag.graphs import compiled
from crag.graphs.crag import graph
from crag.prompts import QUOTE_ANSWER, UNSUPPORTED_ANSWER
from tests.fakes import ANSWER, DOCS, INVENTED, VERBATIM, ReasoningChat, fake_chat, fake_context

QUESTION = "What is Anna Berg's occupation?"
INVENTED_QUOTE = {"document": 1, "sentence": INVENTED, "reason": "it says so"}


def answer_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("answer: ")]


def test_a_streamed_answer_that_was_replaced_ends_on_the_quote(capsys):
    state = stream_run(graph, QUESTION, fake_context(chat_model=fake_chat("She was an astronaut.")), None)
    show(state, "stream")
    out = capsys.readouterr().out
    quote = QUOTE_ANSWER.format(quote=DOCS[0].page_content)
    assert state["quoted"] and answer_lines(out) == ["answer: She was an astronaut.", f"answer: {quote}"]
    assert out.count("(no source supports these words: quoting the kept passage") == 1  # once, not again by show
    assert out.count("She was an astronaut.") == 1  # the streamed draft is not repeated in the note
    assert "asking again" not in out  # a strip could be quoted: the model is not asked a second time


def test_a_second_answer_streams_on_its_own_line_after_the_first(capsys):
    ctx = fake_context(chat_model=fake_chat("She was an astronaut.", "She was a Swedish painter."), quote_threshold=2.0)
    state = stream_run(graph, QUESTION, ctx, None)
    show(state, "stream")
    out = capsys.readouterr().out
    assert answer_lines(out) == ["answer: She was an astronaut.", "answer: She was a Swedish painter."]
    assert "· the first answer does not stand: asking again with the paper prompt" in out
    assert state["asked_again"] and state["answer"] == "She was a Swedish painter." and state["grounded"]
    print_run(state)  # the plain view says the answer is the second one, and what the first was
    assert '(asked again: the first answer, "She was an astronaut.", did not stand)' in capsys.readouterr().out
    assert "[1] Anna Berg" in out  # the quoted strip is listed as the source


def test_a_streamed_answer_that_was_withheld_ends_on_the_abstention(capsys):
    ctx = fake_context(chat_model=fake_chat("She was an astronaut."), quote_threshold=2.0)
    state = stream_run(graph, QUESTION, ctx, None)
    show(state, "stream")
    out = capsys.readouterr().out
    assert answer_lines(out)[-1] == f"answer: {UNSUPPORTED_ANSWER}" and out.count("withheld") == 1
    print_run(state)  # the plain view names the words it withheld
    assert 'the model wrote "She was an astronaut.", which no source supports: withheld' in capsys.readouterr().out


def test_a_streamed_answer_that_stands_is_printed_once(capsys):
    state = stream_run(graph, QUESTION, fake_context(chat_model=fake_chat("She was a Swedish painter.")), None)
    show(state, "stream")
    out = capsys.readouterr().out
    assert answer_lines(out) == ["answer: She was a Swedish painter."] and "quoting" not in out


def test_the_plain_and_json_views_say_a_quote_is_a_quote(capsys):
    state = graph.invoke({"question": QUESTION}, context=fake_context(chat_model=fake_chat("I don't know.")))
    print_run(state)
    out = capsys.readouterr().out
    assert "(the model said it does not know: quoting the kept passage judged most relevant)" in out
    show(state, "json")
    summary = json.loads(capsys.readouterr().out)
    assert summary["quoted"] is True and summary["grounded"] is True and summary["draft"] == "I don't know."
    assert summary["replaced"] == "declined"
    assert summary["asked_again"] is False and summary["first_draft"] == ""  # quoted, not asked again


def test_an_empty_reply_is_named_as_such_and_not_withheld_when_nothing_can_be_quoted(capsys):
    state = graph.invoke({"question": QUESTION}, context=fake_context(chat_model=fake_chat("")))
    print_run(state)
    assert "(the model wrote nothing: quoting the kept passage judged most relevant)" in capsys.readouterr().out
    never = fake_context(chat_model=fake_chat(""), quote_threshold=2.0)
    state = graph.invoke({"question": QUESTION}, context=never)
    print_run(state)
    out = capsys.readouterr().out
    assert f"answer:\n  {UNSUPPORTED_ANSWER}" in out and "withheld" not in out and "UNGROUNDED" not in out


def test_the_finish_of_a_run_without_tokens_prints_the_answer(capsys):
    printer = StreamPrinter()
    printer.finish({"answer": "I don't know: the sources hold nothing relevant to this question.", "draft": ""})
    assert answer_lines(capsys.readouterr().out) == [
        "answer: I don't know: the sources hold nothing relevant to this question."
    ]


def test_a_loop_is_named_as_such_where_it_was_withheld(capsys):
    looping = "She was a painter of seascapes. She was a painter of seascapes. She was a painter of seascapes."
    state = graph.invoke(
        {"question": QUESTION}, context=fake_context(chat_model=fake_chat(looping), quote_threshold=2.0)
    )
    print_run(state)
    assert "which goes round in circles: withheld" in capsys.readouterr().out


def test_a_web_that_is_not_configured_says_where_to_configure_it(capsys):
    """`crag ask --server` prints what the server ran: the hint must not send the user to options of
    the client that cannot set the server's web."""
    print_run({"action": "incorrect", "web_status": "not configured", "answer": "I don't know."})
    out = capsys.readouterr().out
    assert "web search: not configured" in out and "where the graph runs: here, or on the server" in out


def test_progress_lines_count_in_english():
    assert event_line({"node": "retrieve", "documents": [{}]}) == "retrieved 1 document"
    assert event_line({"node": "retrieve", "documents": [{}, {}]}) == "retrieved 2 documents"
    assert event_line({"node": "refine", "strips": [{}]}) == "refined: 1 strip kept"
    assert event_line({"node": "grade", "rechecking": 5}) == (
        "every document below the lower threshold: the chat model grades 5 documents"
    )
    rechecked = {"node": "grade", "recheck_scores": [0.31, -0.88], "action": "ambiguous", "labels": [], "reason": ""}
    assert event_line(rechecked) == "the chat model graded: AMBIGUOUS (+0.31, -0.88)"
    failed = {"node": "grade", "recheck_error": "TimeoutError: slow"}
    assert event_line(failed) == "the chat model could not grade: TimeoutError: slow; INCORRECT stands"
    web = {"node": "rewrite_and_search", "results": [{}], "strips": []}
    assert event_line(web) == "web: 1 result, 0 strips kept"
    further = {"node": "read_further", "further": 5, "first_draft": "I don't know."}
    assert event_line(further) == "the model does not know from the kept strips: reading 5 more strips"


def test_the_plain_view_shows_the_chat_models_second_opinion_beside_the_evaluators_scores(capsys):
    """An Incorrect the chat model agreed with reads like any Incorrect in the reason: the grades show that it
    was asked (and where a run's time went)."""
    run = {"action": "incorrect", "scores": [-0.97, -0.99], "labels": ["incorrect", "incorrect"], "answer": "x"}
    print_run({**run, "recheck_scores": [-0.62, -0.91]})
    out = capsys.readouterr().out
    assert "  -0.970  incorrect  chat model -0.62  " in out and "  -0.990  incorrect  chat model -0.91  " in out
    assert "judged none of them relevant: Incorrect stands" in out
    print_run({**run, "action": "ambiguous", "labels": ["ambiguous", "incorrect"], "recheck_scores": [-0.1, -0.9]})
    out = capsys.readouterr().out
    assert "  -0.970  ambiguous  chat model -0.10  " in out and "Incorrect stands" not in out
    # it grades the first `recheck_k` only: the rest in line, without a grade
    print_run({**run, "scores": [-0.97, -0.99, -0.98], "labels": ["incorrect"] * 3, "recheck_scores": [-0.62, -0.91]})
    out = capsys.readouterr().out
    assert "  -0.980  incorrect                    " in out and "judged none of the first 2 relevant" in out
    print_run(run)  # not asked: no grades, no line about them
    assert "chat model" not in capsys.readouterr().out
    print_run({**run, "recheck_scores": [], "recheck_error": "TimeoutError: slow"})  # asked, and it failed
    out = capsys.readouterr().out
    assert "could not give a second opinion: TimeoutError: slow; Incorrect stands" in out
    assert "judged none of them relevant" not in out


def test_the_knowledge_is_listed_with_the_score_each_strip_was_kept_by(capsys):
    """A quote is "the kept passage judged most relevant": the list must show the scores it was judged by, or
    the quoted strip may read as a lesser one (a retrieved strip is lifted by its standing; a web strip is not)."""
    internal = {"text": "Kept by its standing.", "title": "A", "score": 0.24, "selection_score": 0.99, "lifted": True}
    external = {"text": "From the web.", "title": "B", "score": -0.3, "selection_score": 0.8, "origin": "external"}
    print_run(
        {
            "action": "ambiguous",
            "given": [{**internal, "origin": "internal"}, external],
            "answer": "x",
        }
    )
    out = capsys.readouterr().out
    assert "  [1] +0.99 A: Kept by its standing." in out and "  [2] -0.30 B: From the web." in out


def test_self_reasoning_shows_its_steps_in_every_view(capsys):
    chat = ReasoningChat(quotes=[{"document": 1, "sentence": VERBATIM, "reason": "it says so"}, INVENTED_QUOTE])
    state = stream_run(compiled("self_reasoning"), QUESTION, fake_context(chat_model=chat), None)
    out = capsys.readouterr().out
    assert "· the reader judged its documents relevant (+1.00)" in out
    assert "· the reader selected 2 sentences as evidence: 1 word for word, 1 dropped" in out
    assert answer_lines(out) == [f"answer: {ANSWER}"]  # the steps' JSON replies are not streamed as the answer
    print_run(state)  # no action: a system that does not grade has none to show
    out = capsys.readouterr().out
    assert "action:" not in out and "documents relevant (+1.00)" in out and f'evidence from [1]: "{VERBATIM}"' in out
    assert f'dropped, not word for word in [1]: "{INVENTED}"' in out and "analysis: " in out
    show(state, "json")
    summary = json.loads(capsys.readouterr().out)
    assert len(summary["evidence_dropped"]) == 1 and summary["reasoning"][0]["role"] == "system"
