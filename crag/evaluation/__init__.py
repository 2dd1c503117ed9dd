"""`crag eval`: reproduce the paper's PopQA experiments (or any QA set in the same formats).

The harness answers every question with several systems — no retrieval, standard RAG, RAG with
web search, CRAG and its ablations — on the same knowledge base, web index and generator, and
measures what correction buys: accuracy, knowledge recall and size, actions, evaluator calls and
per-stage latency. Modules: `inputs` (reading and building inputs, drop-gold), `kb` (the Chroma
collection), `systems` (what each system is), `metrics`, `runner` (resumable runs), `report`
(Markdown and plots) and `cli`.
"""
