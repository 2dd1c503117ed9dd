"""Local model names and the assembly of a GGUF shipped in part packages, on small fake parts: the
file appears whole and checked or not at all, a damaged copy is never loaded, and names that mean
nothing are refused before the first answer."""

from __future__ import annotations

import hashlib
import sys
import textwrap

import pytest

from crag.models import gguf
from crag.runtime.extras import MissingExtra

PARTS = [b"GGUF" + b"a" * 1000, b"b" * 3000, b"c" * 17]


@pytest.fixture()
def fake_model(tmp_path, monkeypatch):
    """A model in three part packages importable from tmp_path (as pip installs them), registered as
    local:fake, with the cache in tmp_path."""
    for i, data in enumerate(PARTS, 1):
        package = tmp_path / "site" / f"fake_part{i}"
        (package / "data").mkdir(parents=True)
        (package / "data" / f"part{i:02d}.bin").write_bytes(data)
        (package / "__init__.py").write_text(
            textwrap.dedent(
                f"""
                import os
                def get_part_path():
                    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "part{i:02d}.bin")
                """
            )
        )
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    whole = b"".join(PARTS)
    model = gguf.PackagedModel(
        name="fake-1b",
        title="Fake-1B",
        file="fake.gguf",
        modules=("fake_part1", "fake_part2", "fake_part3"),
        extra="local",
        size=len(whole),
        sha256=hashlib.sha256(whole).hexdigest(),
        licence="Apache-2.0",
        author="nobody",
        url="https://example.org",
    )
    monkeypatch.setitem(gguf.MODELS, model.name, model)
    monkeypatch.setitem(gguf.ALIASES, "fake", model.name)
    monkeypatch.setenv("CRAG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(gguf, "_VERIFIED", {})
    yield model
    for i in range(1, len(PARTS) + 1):
        sys.modules.pop(f"fake_part{i}", None)


def hashes(monkeypatch) -> list:
    """Records each file hashed by the check before a load."""
    seen: list = []
    real = gguf.sha256_of

    def counting(path, progress=None):
        seen.append(path)
        return real(path, progress)

    monkeypatch.setattr(gguf, "sha256_of", counting)
    return seen


def test_the_parts_are_joined_in_order_into_the_cache(fake_model, tmp_path):
    path = gguf.model_file("local:fake", progress=False)
    assert path == tmp_path / "cache" / "models" / "fake.gguf"
    assert path.read_bytes() == b"".join(PARTS)
    assert {p.name for p in path.parent.iterdir()} - {"fake.gguf.lock"} == {"fake.gguf"}  # no partial file left
    assert gguf.cached_file(fake_model) == path
    # by its full name too, the same file
    assert gguf.model_file("local:fake-1b") == path


def test_the_file_is_checked_once_per_process_and_again_when_it_changes(fake_model, monkeypatch):
    path = gguf.model_file("local:fake", progress=False)  # assembled and hashed while written
    seen = hashes(monkeypatch)
    gguf.model_file("local:fake")
    assert seen == []  # checked already in this process
    monkeypatch.setattr(gguf, "_VERIFIED", {})  # a new process
    gguf.model_file("local:fake")
    assert seen == [path]  # checked before its first load
    path.write_bytes(path.read_bytes())  # a new mtime: checked again
    gguf.model_file("local:fake")
    assert seen == [path, path]


def test_a_damaged_copy_in_the_cache_is_assembled_again_never_loaded(fake_model, caplog):
    path = gguf.model_file("local:fake", progress=False)
    path.write_bytes(b"GGUF" + b"x" * (fake_model.size - 4))  # same size, other bytes
    gguf._VERIFIED.clear()
    assert gguf.model_file("local:fake", progress=False).read_bytes() == b"".join(PARTS)
    assert "does not match its SHA-256" in caplog.text


def test_parts_that_do_not_make_the_pinned_file_are_an_error_and_leave_nothing(fake_model, monkeypatch, tmp_path):
    monkeypatch.setitem(gguf.MODELS, "fake-1b", fake_model.__class__(**{**vars(fake_model), "sha256": "0" * 64}))
    with pytest.raises(gguf.ModelFileError, match=r"do not make the pinned file.*pip install --force-reinstall"):
        gguf.model_file("local:fake", progress=False)
    assert {p.name for p in (tmp_path / "cache" / "models").iterdir()} <= {"fake.gguf.lock"}


def test_a_missing_or_short_part_is_an_error_naming_the_packages(fake_model, tmp_path):
    (tmp_path / "site" / "fake_part2" / "data" / "part02.bin").write_bytes(b"b" * 10)
    with pytest.raises(gguf.ModelFileError, match=r"add up to 1,031 bytes, not 4,021.*fake-part1 … fake-part3"):
        gguf.model_file("local:fake", progress=False)


def test_a_model_whose_packages_are_missing_names_its_extra(fake_model, monkeypatch):
    missing = fake_model.__class__(**{**vars(fake_model), "modules": ("fake_part1", "not_installed_part2")})
    monkeypatch.setitem(gguf.MODELS, "fake-1b", missing)
    with pytest.raises(MissingExtra, match=r"Fake-1B is not installed \(1 of its 2 packages.*crag-langgraph\[local\]"):
        gguf.check("local:fake")


def test_names_aliases_and_paths():
    assert gguf.packaged("local") is gguf.DEFAULT
    assert gguf.packaged(" local:tiny ").name == "smollm2-135m"
    assert gguf.packaged("local:small").name == "qwen2.5-coder-0.5b"
    assert gguf.packaged("local:qwen2.5-coder-1.5b") is gguf.DEFAULT
    for path in ("local:/models/x.gguf", "local:~/x.gguf", "local:model.gguf", "local:./x"):
        assert gguf.packaged(path) is None
    with pytest.raises(
        ValueError, match=r"unknown local model 'local:huge'; choose local, local:small, local:tiny, .*/path/to"
    ):
        gguf.packaged("local:huge")
    assert gguf.is_local("local") and gguf.is_local("local:tiny") and not gguf.is_local("ollama:local")
    assert not gguf.is_local("localhost:x") and not gguf.is_local(None)


def test_a_users_own_file_is_loaded_as_it_is_if_it_is_a_gguf(tmp_path):
    own = tmp_path / "mine.gguf"
    own.write_bytes(b"GGUF\x03\x00\x00\x00rest")
    assert gguf.model_file(f"local:{own}") == own
    gguf.check(f"local:{own}")
    with pytest.raises(ValueError, match="no file at"):
        gguf.check(f"local:{tmp_path / 'absent.gguf'}")
    html = tmp_path / "download.gguf"
    html.write_text("<html>Sign in to download</html>")
    with pytest.raises(ValueError, match="is not a GGUF file"):
        gguf.model_file(f"local:{html}")


def test_the_pinned_registry_is_consistent():
    for model in gguf.MODELS.values():
        assert len(model.sha256) == 64 and int(model.sha256, 16) >= 0
        assert model.extra in {"local", "local-small"} and model.licence == "Apache-2.0"
        assert model.inside == (len(model.modules) == 1)
    assert set(gguf.ALIASES.values()) <= set(gguf.MODELS)
