"""Web pages for `crag ingest`: downloaded under the fetcher's guards (a page can redirect anywhere) and
read as the files are. A page's source is the URL as listed, so ingesting again finds the same chunk ids."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urldefrag, urlsplit

from langchain_core.documents import Document
from tqdm.auto import tqdm

from crag.indexing.readers import MARKDOWN_SUFFIXES, html_text, markdown_text, read_pdf, terminal_text
from crag.passages import passage, record_fields
from crag.search.downloads import Download, download_all
from crag.search.fetch import HTML_TYPES, MARKDOWN_TYPES, PDF_TYPES, without_credentials
from crag.search.web_base import WebSearchError

# a URL list is chosen by its user, so larger and slower pages than a search hit's are expected (PDFs)
DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_BYTES = 50_000_000


def is_url(text: str) -> bool:
    """Whether a `crag ingest` argument is an http(s) URL rather than a file."""
    return urlsplit(text.strip()).scheme.lower() in ("http", "https")


def read_url_list(path: str | Path) -> list[str]:
    """The URLs in a list file, one a line; blank lines and lines starting with # are skipped."""
    path = Path(path).expanduser()
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as exc:
        raise ValueError(f"cannot read the URL list {path}: {exc.strerror or exc}") from exc
    urls = []
    for number, line in enumerate(lines, start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if not is_url(line):
            raise ValueError(f"{path}, line {number}: not an http(s) URL: {line!r}")
        urls.append(line)
    return urls


@dataclass(frozen=True)
class Downloaded:
    """What `load_urls` read, and what it could not."""

    documents: list[Document]
    urls: list[str]  # the pages read
    failed: list[str]  # "URL: why"
    empty_pages: list[str]  # sources of PDF pages without text


def _page(download: Download, url: str) -> tuple[list[Document], list[str]]:
    """(passages, sources of PDF pages without text) of one page; ValueError says why it has no text."""
    if download.media_type in PDF_TYPES:
        pages = read_pdf(download.body, urldefrag(url).url, url)
        return pages.documents, pages.empty
    fields: dict = {}
    if download.media_type in HTML_TYPES:
        text, title = html_text(download.text)
    elif download.media_type in MARKDOWN_TYPES or urlsplit(url).path.lower().endswith(MARKDOWN_SUFFIXES):
        # raw Markdown files are often served as text/plain (raw.githubusercontent.com does)
        page = markdown_text(download.text)
        text, title, fields = page.text, page.title, page.fields
    else:
        text, title = terminal_text(download.text), ""
    if not text.strip():
        raise ValueError("no text found on the page")
    return [passage(text, title=title or url, source=url, **record_fields(fields))], []


def load_urls(
    urls: Iterable[str],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    max_bytes: int = DEFAULT_MAX_BYTES,
    allow_private: bool = False,
    progress: bool = False,
) -> Downloaded:
    """Download and read each URL once; a failure is reported, not raised."""
    unique = list(dict.fromkeys(url.strip() for url in urls))
    if not unique:
        return Downloaded([], [], [], [])
    with tqdm(total=len(unique), desc="download", unit="page", disable=not progress) as bar:
        # each page read (HTML, PDF) within its download's deadline: a hostile PDF can take longer to read than to get
        pages = download_all(
            unique,
            timeout=timeout,
            max_bytes=max_bytes,
            allow_private=allow_private,
            on_done=bar.update,
            read=lambda download, url: _page(download, without_credentials(url)),
        )
    documents: list[Document] = []
    read: list[str] = []
    failed: list[str] = []
    empty: list[str] = []
    for url, page in zip(unique, pages):
        shown = without_credentials(url)
        # a failed download, a page with no text, a PDF that cannot be read, HTML trafilatura chokes on
        if isinstance(page, Exception):
            failed.append(f"{shown}: {page}" if isinstance(page, ValueError | WebSearchError) else f"{shown}: {page!r}")
            continue
        found, empty_pages = page
        documents += found
        empty += empty_pages
        read.append(shown)
    return Downloaded(documents, read, failed, empty)
