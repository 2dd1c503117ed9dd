"""Local model names and the GGUFs shipped in packages, on small fake installed distributions: the
parts are found through their metadata and never imported, each is checked against its pinned SHA-256,
the file appears whole and checked or not at all, it is hashed again before every load so a changed byte
is never loaded (even with the size and modification time kept), and names that mean nothing are
refused before the first answer."""

from __future__ import annotations

import hashlib
import os
import sys

import pytest

from crag.models import chat, gguf
from crag.runtime.extras import MissingExtra

PARTS = [b"GGUF" + b"a" * 1000, b"b" * 3000, b"c" * 17]
WHOLE = b"GGUF" + b"w" * 500


def install(site, name: str, files: dict[str, bytes], marker) -> None:
    """A distribution as pip leaves it in site-packages: its files, and a dist-info with METADATA and a
    RECORD; its package's __init__ writes `marker` and raises, so importing it shows."""
    module = name.replace("-", "_")
    files = {
        **files,
        f"{module}/__init__.py": f"open({str(marker)!r}, 'a').write({name!r})\nraise ImportError\n".encode(),
    }
    info = site / f"{module}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    record = []
    for rel, data in files.items():
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_bytes(data)
        record.append(f"{rel},sha256=x,{len(data)}")
    (info / "RECORD").write_text("\n".join([*record, f"{info.name}/RECORD,,", ""]))


def part(name: str, file: str, data: bytes) -> gguf.Part:
    return gguf.Part(name, "1.0", file, len(data), hashlib.sha256(data).hexdigest())


@pytest.fixture()
def marker(tmp_path):
    path = tmp_path / "imported"
    yield path
    assert not path.exists(), f"a model package was imported: {path.read_text()}"  # no package's code ran


@pytest.fixture()
def fake_model(tmp_path, monkeypatch, marker):
    """A model in three part packages installed in tmp_path (as pip installs them), registered as
    local:fake, with the cache in tmp_path."""
    site = tmp_path / "site"
    parts = []
    for i, data in enumerate(PARTS, 1):
        file = f"fake_part{i}/data/part{i:02d}.bin"
        install(site, f"fake-part{i}", {file: data}, marker)
        parts.append(part(f"fake-part{i}", file, data))
    monkeypatch.syspath_prepend(str(site))
    whole = b"".join(PARTS)
    model = gguf.PackagedModel(
        name="fake-1b",
        title="Fake-1B",
        file="fake.gguf",
        distributions=("fake-part1", "fake-part2", "fake-part3"),
        extra="local",
        size=len(whole),
        sha256=hashlib.sha256(whole).hexdigest(),
        licence="Apache-2.0",
        author="nobody",
        url="https://example.org",
        parts=tuple(parts),
    )
    monkeypatch.setitem(gguf.MODELS, model.name, model)
    monkeypatch.setitem(gguf.ALIASES, "fake", model.name)
    monkeypatch.setenv("CRAG_CACHE_DIR", str(tmp_path / "cache"))
    yield model
    assert not any(m.startswith("fake_part") for m in sys.modules)


@pytest.fixture()
def fake_whole(tmp_path, monkeypatch, marker):
    """A model whole inside one installed package, as local:fake-whole."""
    install(tmp_path / "site", "fake-whole", {"fake_whole/model.gguf": WHOLE}, marker)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    model = gguf.PackagedModel(
        name="fake-whole",
        title="Fake-Whole",
        file="model.gguf",
        distributions=("fake-whole",),
        extra="local",
        size=len(WHOLE),
        sha256=hashlib.sha256(WHOLE).hexdigest(),
        licence="Apache-2.0",
        author="nobody",
        url="https://example.org",
        inside=True,
        parts=(part("fake-whole", "fake_whole/model.gguf", WHOLE),),
    )
    monkeypatch.setitem(gguf.MODELS, model.name, model)
    return model


def hashes(monkeypatch) -> list:
    """Records each file hashed by the check before a load."""
    seen: list = []
    real = gguf.sha256_of

    def counting(path, progress=None):
        seen.append(path)
        return real(path, progress)

    monkeypatch.setattr(gguf, "sha256_of", counting)
    return seen


def tamper(path, offset: int = 10) -> None:
    """Change one byte of `path` in place, keeping its size, inode and modification time."""
    stat = path.stat()
    with path.open("r+b") as f:
        f.seek(offset)
        byte = f.read(1)
        f.seek(offset)
        f.write(bytes([byte[0] ^ 0xFF]))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (stat.st_size, stat.st_mtime_ns, stat.st_ino)


def test_the_parts_are_found_by_metadata_and_joined_in_order_into_the_cache(fake_model, tmp_path):
    assert gguf.installed(fake_model)
    gguf.check("local:fake")
    assert gguf.part_paths(fake_model) == [tmp_path / "site" / p.file for p in fake_model.parts]
    path = gguf.model_file("local:fake", progress=False)
    assert path == tmp_path / "cache" / "models" / "fake.gguf"
    assert path.read_bytes() == b"".join(PARTS)
    assert {p.name for p in path.parent.iterdir()} - {"fake.gguf.lock"} == {"fake.gguf"}  # no partial file left
    assert gguf.cached_file(fake_model) == path
    # by its full name too, the same file
    assert gguf.model_file("local:fake-1b") == path
    # (the `marker` fixture fails the test if any part package's __init__ ran)


def test_the_file_is_hashed_before_every_load(fake_model, monkeypatch):
    path = gguf.model_file("local:fake", progress=False)  # assembled and hashed while written
    seen = hashes(monkeypatch)
    gguf.model_file("local:fake")
    gguf.model_file("local:fake")
    assert seen == [path, path]  # no stamp stands in for the hash


def test_a_changed_byte_in_the_cache_is_never_loaded_even_with_the_same_size_and_time(fake_model, caplog):
    path = gguf.model_file("local:fake", progress=False)
    tamper(path)
    assert gguf.model_file("local:fake", progress=False).read_bytes() == b"".join(PARTS)  # assembled again
    assert "does not match its SHA-256" in caplog.text


def test_a_changed_byte_in_a_whole_packaged_file_is_refused(fake_whole, tmp_path):
    path = gguf.model_file("local:fake-whole")
    assert path == tmp_path / "site" / "fake_whole" / "model.gguf"
    tamper(path)
    with pytest.raises(
        gguf.ModelFileError, match=r"fake-whole is not the file Fake-Whole should be \(SHA-256 [0-9a-f]{64}, expected"
    ):
        gguf.model_file("local:fake-whole")


def test_every_context_of_a_pool_checks_the_file_before_llama_cpp_loads_it(fake_whole, monkeypatch):
    loaded: list = []
    monkeypatch.setattr(chat, "load_llama", lambda path, **options: loaded.append(path) or object())
    pool = chat._Pool.__new__(chat._Pool)  # a pool's loading alone, without llama.cpp
    pool._model, pool._options = "local:fake-whole", {}
    pool._load()  # the first context
    tamper(gguf.location(fake_whole))
    with pytest.raises(gguf.ModelFileError, match="is not the file Fake-Whole should be"):
        pool._load()  # a later one (a lane, another instance): refused, never loaded
    assert len(loaded) == 1


def test_a_part_whose_hash_differs_is_refused_naming_the_package_and_both_hashes(fake_model, tmp_path):
    tamper(tmp_path / "site" / "fake_part2" / "data" / "part02.bin")
    wrong = hashlib.sha256((tmp_path / "site" / "fake_part2" / "data" / "part02.bin").read_bytes()).hexdigest()
    with pytest.raises(gguf.ModelFileError) as error:
        gguf.model_file("local:fake", progress=False)
    assert "fake-part2" in str(error.value) and wrong in str(error.value)
    assert fake_model.parts[1].sha256 in str(error.value)
    assert {p.name for p in (tmp_path / "cache" / "models").iterdir()} <= {"fake.gguf.lock"}  # nothing left


def test_parts_that_do_not_make_the_pinned_file_are_an_error_and_leave_nothing(fake_model, monkeypatch, tmp_path):
    monkeypatch.setitem(gguf.MODELS, "fake-1b", fake_model.__class__(**{**vars(fake_model), "sha256": "0" * 64}))
    with pytest.raises(gguf.ModelFileError, match=r"do not make the pinned file.*pip install --force-reinstall"):
        gguf.model_file("local:fake", progress=False)
    assert {p.name for p in (tmp_path / "cache" / "models").iterdir()} <= {"fake.gguf.lock"}


def test_a_missing_or_short_part_is_an_error_naming_the_package(fake_model, tmp_path):
    (tmp_path / "site" / "fake_part2" / "data" / "part02.bin").write_bytes(b"b" * 10)
    with pytest.raises(gguf.ModelFileError, match=r"fake-part2's part of Fake-1B .* is 10 bytes, not 3,000 bytes"):
        gguf.model_file("local:fake", progress=False)


def test_a_model_whose_packages_are_missing_names_its_extra(fake_model, monkeypatch):
    missing = fake_model.__class__(**{**vars(fake_model), "distributions": ("fake-part1", "not-installed-part2")})
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
    # not pinned: the user's own file, checked only to be a GGUF
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


def test_a_users_path_to_a_packaged_file_is_checked_as_that_model(fake_whole):
    path = gguf.location(fake_whole)
    assert gguf.model_file(f"local:{path}") == path
    tamper(path)
    with pytest.raises(gguf.ModelFileError, match="is not the file Fake-Whole should be"):
        gguf.model_file(f"local:{path}")


def test_the_pinned_registry_is_consistent():
    for model in gguf.MODELS.values():
        assert len(model.sha256) == 64 and int(model.sha256, 16) >= 0
        # each package's data file pinned, in order, adding up to the whole
        assert tuple(p.distribution for p in model.parts) == model.distributions
        assert sum(p.size for p in model.parts) == model.size
        assert all(len(p.sha256) == 64 and int(p.sha256, 16) >= 0 for p in model.parts)
        if model.inside:
            assert model.parts[0].sha256 == model.sha256 and model.parts[0].file.endswith("/" + model.file)
        assert model.extra in {"local", "local-small"} and model.licence == "Apache-2.0"
        assert model.inside == (len(model.distributions) == 1)
    assert set(gguf.ALIASES.values()) <= set(gguf.MODELS)
