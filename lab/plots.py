"""The harness's pictures, drawn with matplotlib's Agg backend (files only, no display needed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from crag.evaluation.answer_metrics import ACTIONS
from crag.runtime.extras import require

COLOURS = {"correct": "#2e7d32", "ambiguous": "#f9a825", "incorrect": "#c62828"}


def _pyplot():
    matplotlib = require("matplotlib", "eval")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def action_distribution(results: dict, path: Path) -> Path | None:
    """Stacked bars: how often each graph system took each action."""
    rows = [(name, r["actions"]) for name, r in results.items() if r.get("actions")]
    if not rows:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 0.5 * len(rows) + 1.4))
    left = np.zeros(len(rows))
    for action in ACTIONS:
        counts = np.array([actions.get(action, 0) for _, actions in rows], dtype=float)
        ax.barh([name for name, _ in rows], counts, left=left, color=COLOURS[action], label=action.capitalize())
        left += counts
    ax.invert_yaxis()
    ax.set_xlabel("questions")
    ax.set_title("Actions taken")
    ax.legend(
        loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize="small"
    )  # beside the bars, clear of the axis label
    return _save(fig, path)


def score_histogram(
    scores: list[float], has_answer: list[bool], thresholds: tuple[float, float], path: Path, system: str = "crag"
) -> Path | None:
    """Evaluator scores of the retrieved documents, split by whether a document holds an answer."""
    if not scores:
        return None
    plt = _pyplot()
    values, flags = np.asarray(scores), np.asarray(has_answer, dtype=bool)
    fig, ax = plt.subplots(figsize=(7, 3.6))
    bins = np.linspace(-1, 1, 41)
    ax.hist(
        [values[~flags], values[flags]],
        bins=bins,
        stacked=True,
        color=["#90a4ae", "#1565c0"],
        label=["no answer in the document", "answer in the document"],
    )
    upper, lower = thresholds
    ax.axvline(upper, color=COLOURS["correct"], linestyle="--", label=f"upper {upper:.3g}")
    ax.axvline(lower, color=COLOURS["incorrect"], linestyle=":", label=f"lower {lower:.3g}")
    ax.set_xlabel("evaluator score")
    ax.set_ylabel("documents")
    ax.set_title(f"Retrieved documents' scores ({system})")
    ax.legend(fontsize="small")
    return _save(fig, path)


def threshold_sweep(
    table: np.ndarray, grid: np.ndarray, path: Path, marks: dict[str, tuple[float, float]] | None = None
) -> Path | None:
    """Heatmap of accuracy for each (upper, lower) pair; lower > upper is left blank."""
    if np.all(np.isnan(table)):
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 5))
    step = (grid[1] - grid[0]) if len(grid) > 1 else 1.0
    extent = [grid[0] - step / 2, grid[-1] + step / 2, grid[0] - step / 2, grid[-1] + step / 2]
    image = ax.imshow(table * 100, origin="lower", extent=extent, cmap="viridis", aspect="auto")
    fig.colorbar(image, ax=ax, label="accuracy (%)")
    for (label, (upper, lower)), marker in zip((marks or {}).items(), "o^sD"):
        ax.plot(upper, lower, marker, color="white", markeredgecolor="black", label=label)
    if marks:
        ax.legend(fontsize="small", loc="upper left")
    ax.set_xlabel("upper threshold (Correct at or above)")
    ax.set_ylabel("lower threshold (Incorrect when all below)")
    ax.set_title("CRAG accuracy by thresholds")
    return _save(fig, path)


def robustness_curve(points: dict[str, list[tuple[float, float, list[float]]]], path: Path) -> Path | None:
    """Accuracy (with its 95% interval) against the fraction of answer-bearing passages removed."""
    if not points:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    for system, series in points.items():
        series = sorted(series)
        x = [f for f, _, _ in series]
        y = np.array([a * 100 for _, a, _ in series])
        low = y - np.array([ci[0] * 100 for _, _, ci in series])
        high = np.array([ci[1] * 100 for _, _, ci in series]) - y
        ax.errorbar(x, y, yerr=[low, high], marker="o", capsize=3, label=system)
    ax.set_xlabel("fraction of answer-bearing passages removed from the knowledge base")
    ax.set_ylabel("accuracy (%)")
    ax.set_title("Robustness to retrieval quality")
    ax.legend()
    ax.grid(alpha=0.3)
    return _save(fig, path)


def _save(fig, path: Path) -> Path:
    path = Path(path)
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    _pyplot().close(fig)
    return path
