"""`crag ingest`: the command over `crag.indexing.pipeline`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from crag.cli.common import fail
from crag.cli.settings import with_settings
from crag.indexing.api import ingest
from crag.indexing.files import COMPRESSED, SUFFIXES, find_files
from crag.indexing.pipeline import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE, check_chunking
from crag.indexing.readers import REPEATED_IN
from crag.indexing.urls import DEFAULT_TIMEOUT, is_url, read_url_list
from crag.models.embeddings import EmbeddingError
from crag.search.store import StoreError
from crag.settings import Context


def _named(paths: tuple[str, ...], limit: int = 5) -> str:
    more = f" and {len(paths) - limit} more" if len(paths) > limit else ""
    return ", ".join(paths[:limit]) + more


def _warn(message: str) -> None:
    typer.secho(f"warning: {message}", fg=typer.colors.YELLOW, err=True)


@with_settings("chroma_dir", "chroma_url", "collection", "embeddings", "record_manager")
def ingest_cmd(
    sources: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="PATHS_OR_URLS",
            help="Files or folders (.txt, .md/.markdown, .rst, .html/.htm, .pdf, .jsonl of {title, text} lines, GNU .info, plain text with no type in its name such as LICENSE; each also .gz) and http(s):// pages.",
            show_default=False,
        ),
    ] = None,
    urls_file: Annotated[
        Path | None,
        typer.Option("--urls", help="A file of URLs to ingest, one a line (blank lines and # comments skipped)."),
    ] = None,
    allow_private_fetch: Annotated[
        bool, typer.Option("--allow-private-fetch", help="Also download from private and loopback addresses.")
    ] = False,
    fetch_timeout: Annotated[
        float, typer.Option("--fetch-timeout", min=0.1, help="Seconds allowed for each page's download and reading.")
    ] = DEFAULT_TIMEOUT,
    chunk_size: Annotated[int, typer.Option("--chunk-size", min=1, help="Characters per chunk.")] = DEFAULT_CHUNK_SIZE,
    chunk_overlap: Annotated[
        int, typer.Option("--chunk-overlap", min=0, help="Characters shared by neighbouring chunks.")
    ] = DEFAULT_CHUNK_OVERLAP,
    remove_missing: Annotated[
        bool,
        typer.Option(
            "--remove-missing",
            help="Also remove the chunks of every file and page not given this time (deleted since): the "
            "collection then holds exactly what was given.",
        ),
    ] = False,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Show a progress bar.")] = True,
    *,
    settings: dict[str, Any],
) -> None:
    """Add documents and web pages to the internal knowledge base; chunks already there are skipped."""
    try:
        store_settings = Context(**settings)
    except ValueError as exc:
        fail(str(exc))
    folder, chroma_url = Path(store_settings.chroma_dir).expanduser(), store_settings.chroma_url
    collection = store_settings.collection
    urls = [source for source in sources or [] if is_url(source)]
    paths = [Path(source) for source in sources or [] if not is_url(source)]
    try:
        check_chunking(chunk_size, chunk_overlap)  # fail on bad input before opening (maybe creating) the store
        if urls_file:
            urls += read_url_list(urls_file)
        files, _ = find_files(paths)
        if not files and not urls:
            if not paths:
                fail("nothing to ingest: give files, folders or URLs, or --urls FILE")
            fail(
                f"no {', '.join(SUFFIXES)} files, plain text files with no type in their name (LICENSE) or such "
                f"files {COMPRESSED} in {', '.join(map(str, paths))}"
            )
        report = ingest(  # the Python API's one path: the settings' store, under its lock, through index()
            [*paths, *urls],
            context=store_settings,
            cleanup="full" if remove_missing else "scoped_full",
            allow_private_fetch=allow_private_fetch,
            fetch_timeout=fetch_timeout,
            chunk_size=chunk_size,
            chunk_overlap=chunk_overlap,
            progress=progress,
        )
    except (FileNotFoundError, ValueError, StoreError, EmbeddingError, OSError) as exc:
        fail(str(exc))
    target = chroma_url or str(folder)
    pages = f", {report.urls} web pages" if urls else ""
    failed = f" ({len(report.failed_urls)} failed)" if report.failed_urls else ""
    duplicates = f", {report.duplicates} duplicates within the input" if report.duplicates else ""
    empty = f", {report.empty_records} without text skipped" if report.empty_records else ""
    removed = f", {report.removed} no longer in their files removed" if report.removed else ""
    typer.echo(
        f"{report.files} files{pages}{failed}, {report.chunks} chunks: {report.added} added, "
        f"{report.skipped_existing} already present{duplicates}{empty}{removed} -> {collection} at {target}"
    )
    if report.unsupported_files:
        typer.echo(
            f"skipped {len(report.unsupported_files)} unsupported files: {_named(report.unsupported_files)} "
            f"(supported: {', '.join(SUFFIXES)}, each also compressed as {COMPRESSED})"
        )
    if report.unindexed_files:
        typer.echo(
            f"skipped {len(report.unindexed_files)} pages that ask not to be indexed (robots noindex) or only "
            f"redirect (meta refresh); name one to ingest it anyway: {_named(report.unindexed_files)}"
        )
    if report.repeated_pages:
        typer.echo(
            f"skipped {len(report.repeated_pages)} pages with nothing of their own (a heading over lines that at "
            f"least {REPEATED_IN} pages repeat: moved-page notices, placeholders): {_named(report.repeated_pages)}"
        )
    for file in report.binary_files:
        _warn(f"skipped {file}: it is binary, not text")
    for skipped in (*report.unreadable_files, *report.failed_urls):  # "path or URL: why"
        _warn(f"skipped {skipped}")
    if report.empty_pages:
        _warn(
            f"skipped {len(report.empty_pages)} PDF pages without text (blank, or scanned: OCR them first): "
            f"{_named(report.empty_pages)}"
        )
    if not report.chunks:  # a script must not take "every source failed" for success
        fail("nothing was ingested: every file and page given was skipped (see above)")
