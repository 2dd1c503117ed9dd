"""`crag.models.llama.load_llama`: every model loads without llama.cpp's extra weight buffers (they crash
llama-cpp-python 0.3.36 on AMX CPUs and slow prompts on AVX2 ones), and the binding's defaults are
left as they were, whether the load succeeds or fails."""

from __future__ import annotations

import types

import pytest

from crag.models import llama as loading


class Params:
    use_extra_bufts = True


def fake_llama_cpp(fail: bool = False):
    binding = types.SimpleNamespace(llama_model_default_params=Params)
    seen = {}

    class Llama:
        def __init__(self, model_path: str, **options):
            seen["params"] = binding.llama_model_default_params()  # what llama.py reads while loading
            seen["path"], seen["options"] = model_path, options
            if fail:
                raise ValueError("Failed to load model from file")

    module = types.SimpleNamespace(Llama=Llama, llama=types.SimpleNamespace(llama_cpp=binding))
    return module, binding, seen


def test_loads_without_extra_buffers_and_restores_the_defaults(monkeypatch, tmp_path):
    module, binding, seen = fake_llama_cpp()
    monkeypatch.setattr(loading, "require", lambda name, extra: module)
    loading.load_llama(tmp_path / "m.gguf", n_ctx=512, verbose=False)
    assert seen["params"].use_extra_bufts is False
    assert seen["path"] == str(tmp_path / "m.gguf") and seen["options"] == {"n_ctx": 512, "verbose": False}
    assert binding.llama_model_default_params is Params
    assert binding.llama_model_default_params().use_extra_bufts is True


def test_a_failed_load_restores_the_defaults(monkeypatch, tmp_path):
    module, binding, seen = fake_llama_cpp(fail=True)
    monkeypatch.setattr(loading, "require", lambda name, extra: module)
    with pytest.raises(ValueError, match="Failed to load"):
        loading.load_llama(tmp_path / "m.gguf")
    assert seen["params"].use_extra_bufts is False
    assert binding.llama_model_default_params is Params


def test_overlapping_loads_leave_the_defaults_as_they_were(monkeypatch, tmp_path):
    """A lane's context can be made while another model's pool loads: the second load waits for the first,
    so neither puts back the other's wrapper."""
    import threading

    binding = types.SimpleNamespace(llama_model_default_params=Params)
    first_inside, release = threading.Event(), threading.Event()
    seen = []

    class Llama:
        def __init__(self, model_path: str, **options):
            seen.append(binding.llama_model_default_params().use_extra_bufts)
            if model_path.endswith("first.gguf"):
                first_inside.set()
                release.wait(5)

    module = types.SimpleNamespace(Llama=Llama, llama=types.SimpleNamespace(llama_cpp=binding))
    monkeypatch.setattr(loading, "require", lambda name, extra: module)
    first = threading.Thread(target=loading.load_llama, args=(tmp_path / "first.gguf",))
    first.start()
    assert first_inside.wait(5)
    second = threading.Thread(target=loading.load_llama, args=(tmp_path / "second.gguf",))
    second.start()
    second.join(0.2)
    assert second.is_alive()  # waiting for the first load
    release.set()
    first.join(5)
    second.join(5)
    assert seen == [False, False]
    assert binding.llama_model_default_params is Params
