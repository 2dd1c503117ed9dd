"""How fast llama.cpp reads a prompt and writes an answer with a local model on this CPU, loaded as crag
loads it (without llama.cpp's extra weight buffers, `crag.models.llama`) and, for comparison, with them.

    python -m lab.benchmarks.llama_speed                    # the default model, as loaded
    python -m lab.benchmarks.llama_speed --extra-buffers    # with AMX / repacked weights (crashes 0.3.36 on AMX CPUs)

The prompt is evaluated from scratch three times (the first run includes warming the caches); the
answer is a greedy chat completion of `--max-tokens`. Prints llama-cpp-python's version and tokens/s.
"""

from __future__ import annotations

import argparse
import time

import llama_cpp

from crag.models import gguf
from crag.models.llama import load_llama

PROMPT = (
    "Passages:\ngzip - compress or expand files. -k --keep: Keep (don't delete) input files during compression "
    "or decompression. -c --stdout: Write output on standard output; keep original files unchanged.\n"
) * 12


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="local", help="a local model name or a GGUF path (default: local)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=60)
    parser.add_argument("--extra-buffers", action="store_true", help="load with llama.cpp's extra weight buffers")
    args = parser.parse_args()
    path = str(gguf.model_file(args.model))
    options = {"n_ctx": 2048, "n_batch": 512, "n_threads": args.threads, "seed": 0, "verbose": False}
    llama = llama_cpp.Llama(model_path=path, **options) if args.extra_buffers else load_llama(path, **options)
    tokens = llama.tokenize(PROMPT.encode())
    print(f"llama-cpp-python {llama_cpp.__version__}, {path}, extra buffers {'on' if args.extra_buffers else 'off'}")
    for run in range(3):
        llama.reset()
        started = time.perf_counter()
        llama.eval(tokens)
        print(
            f"prompt, run {run + 1}: {len(tokens)} tokens, {len(tokens) / (time.perf_counter() - started):.0f} tokens/s"
        )
    llama.reset()
    started = time.perf_counter()
    reply = llama.create_chat_completion(
        messages=[{"role": "user", "content": "Write four sentences about the sea."}],
        max_tokens=args.max_tokens,
        temperature=0.0,
    )
    written = reply["usage"]["completion_tokens"]
    print(
        f"answer: {written} tokens, {written / (time.perf_counter() - started):.1f} tokens/s (its short prompt included)"
    )


if __name__ == "__main__":
    main()
