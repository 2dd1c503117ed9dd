"""Prompts, as named constants. Where the paper gives one, it is used word for word."""

from __future__ import annotations

# CRAG, Appendix A (PopQA): the few-shot prompt that turns a question into a web-search query.
REWRITE_PROMPT = (
    "Extract at most three keywords separated by comma from the following dialogues and questions as "
    "queries for the web search, including topic background within dialogues and main intent within "
    "questions. \n\n"
    "question: What is Henry Feilden's occupation?\nquery: Henry Feilden, occupation\n\n"
    "question: In what city was Billy Carlson born?\nquery: city, Billy Carlson, born\n\n"
    "question: What is the religion of John Gwynn?\nquery: religion of John Gwynn\n\n"
    "question: What sport does Kiribati men's national basketball team play?\n"
    "query: sport, Kiribati men's national basketball team play\n\n"
    "question: {question}\nquery: "
)

# CRAG's PopQA generation prompt (the paper's instruction-with-reference layout), with the
# knowledge numbered so the answer can cite it.
GENERATE_PROMPT = (
    "Refer to the following documents, follow the instruction and answer the question.\n\n"
    "Documents:\n{knowledge}\n\n"
    "Instruction: Answer the question: {question}\n"
    "Answer in one short sentence and cite the documents you used by number, like [1]."
)

# With no knowledge at all (every source failed), the generator answers from its own memory.
GENERATE_NO_KNOWLEDGE_PROMPT = "Answer the question in one short sentence: {question}"

# A follow-up on a thread ("When was she born?") is rewritten into a self-contained question
# before retrieval, from the thread's last turns.
CONDENSE_PROMPT = (
    "Rewrite the last question so that it can be understood without the conversation: replace "
    "words like he, she, it, they and there with the names they refer to. Reply with the rewritten "
    "question only.\n\n"
    "Conversation:\nQ: Who was Ada Lovelace?\nA: An English mathematician, born in 1815.\n"
    "Last question: What did she write about?\nRewritten: What did Ada Lovelace write about?\n\n"
    "Conversation:\nQ: Where is Lake Baikal?\nA: In southern Siberia, Russia.\n"
    "Last question: How deep is it?\nRewritten: How deep is Lake Baikal?\n\n"
    "Conversation:\n{history}\nLast question: {question}\nRewritten:"
)
