"""Fetch search-result pages as titled paragraphs. The URLs are strangers' (SSRF): http(s) without credentials,
every resolved address public (checked on each redirect, hence redirects by hand), the connection pinned to
the address checked; bodies capped, one deadline for the whole fetch (httpx's timeouts are per read)."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import re
import socket
import threading
import zlib
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httpx
from langchain_core.documents import Document

from crag.passages import passage, source_of, title_of, titled
from crag.runtime.extras import DISTRIBUTION
from crag.search.web_base import TransientWebSearchError, WebSearchError

MAX_REDIRECTS = 5
MIN_WORDS = 10  # shorter lines are menus, captions and buttons, not knowledge
HTML_TYPES = ("text/html", "application/xhtml+xml")
MARKDOWN_TYPES = ("text/markdown", "text/x-markdown")
TEXT_TYPES = ("text/plain", *MARKDOWN_TYPES)
PAGE_TYPES = (HTML_TYPES + TEXT_TYPES, "HTML or text")  # what a download accepts: (media types, their name in errors)
JSON_TYPES = (("application/json",), "JSON")
PDF_TYPES = ("application/pdf",)  # read only where asked for (`crag ingest` URL lists), never for search hits
DOCUMENT_TYPES = (HTML_TYPES + TEXT_TYPES + PDF_TYPES, "HTML, text or PDF")
# the most fetched paragraphs a search hands on to be scored (the evaluator, the strip embeddings): a hostile page of
# 2 MB can hold 20,000 ten-word lines, each scored by the evaluator and embedded.
MAX_PARAGRAPHS = 300
MAX_BYTES = 2_000_000  # the largest page or API answer read, counted after decompression
# the encodings asked for and decoded here, each a piece at a time: httpx's decoders inflate a whole network read at
# once, and 64 KB of gzip can be 64 MB of page. Brotli and zstd are not asked for, and refused if sent anyway.
ACCEPT_ENCODING = "gzip, deflate"
DECODED_PIECE = 64 * 1024  # the most one step of decompression writes
# Wikimedia's policy asks clients to say who they are and how to reach their makers
USER_AGENT = f"{DISTRIBUTION} (corrective RAG page fetcher; +https://pypi.org/project/{DISTRIBUTION}/)"

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
T = TypeVar("T")
NAT64 = ipaddress.ip_network("64:ff9b::/96")  # RFC 6052's well-known prefix; the IPv4 address is the last 32 bits


def _embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 one carries: mapped (::ffff:a.b.c.d), 6to4 (2002::/16), Teredo, NAT64."""
    found = [address.ipv4_mapped, address.sixtofour]
    if address.teredo is not None:
        found += list(address.teredo)  # (server, client)
    if address in NAT64:
        found.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return [a for a in found if a is not None]


def _refusal(address: IPAddress) -> str | None:
    """Why an address must not be fetched from, or None if it is public."""
    if isinstance(address, ipaddress.IPv6Address):
        for inner in _embedded_ipv4(address):  # 2002:7f00:1:: is 127.0.0.1 to a 6to4 relay
            if reason := _refusal(inner):
                return f"{reason}, wrapped in {address}"
    for kind in ("loopback", "link_local", "unspecified", "multicast", "private", "reserved"):
        if getattr(address, f"is_{kind}"):
            return kind.replace("_", "-")
    return None if address.is_global else "not globally routable"  # e.g. 100.64.0.0/10


async def _resolve(host: str, port: int, allow_private: bool) -> str:
    """The address to connect to, once every address `host` resolves to has passed the check."""
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise WebSearchError(f"cannot resolve {host}: {exc}") from exc
    addresses: list[IPAddress] = []
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%")[0])  # drop an IPv6 scope id
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise WebSearchError(f"cannot resolve {host}: no addresses")
    if not allow_private:
        for address in addresses:
            if reason := _refusal(address):
                raise WebSearchError(f"refusing {host}: it resolves to {address} ({reason})")
    return str(min(addresses, key=lambda a: a.version))  # IPv4 first: IPv6 routes are often missing


def _parse(url: str) -> httpx.URL:
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise WebSearchError(f"bad URL {url!r}: {exc}") from exc
    if parsed.scheme not in ("http", "https"):
        raise WebSearchError(f"refusing {url!r}: only http and https pages are fetched")
    if parsed.userinfo:
        raise WebSearchError(f"refusing a URL with credentials (host {parsed.host})")
    if not parsed.host:
        raise WebSearchError(f"bad URL {url!r}: no host")
    return parsed


async def _download(
    client: httpx.AsyncClient,
    url: str,
    *,
    timeout: float,
    max_bytes: int,
    allow_private: bool,
    accept: tuple[tuple[str, ...], str] = PAGE_TYPES,
    deadline: float | None = None,
) -> tuple[bytes, str, str | None, httpx.URL]:
    """(body, media type, charset, final URL), following checked redirects, all within `timeout` seconds
    (by the event loop's clock's `deadline`, when given: the page's extraction shares it)."""
    current = _parse(url)
    if deadline is None:
        deadline = asyncio.get_running_loop().time() + timeout
    try:
        async with asyncio.timeout_at(deadline):
            for _ in range(MAX_REDIRECTS + 1):
                host = current.raw_host.decode("ascii")
                address = await _resolve(
                    host, current.port or (443 if current.scheme == "https" else 80), allow_private
                )
                request = client.build_request(
                    "GET",
                    current.copy_with(host=address),  # pinned to the checked address
                    # no connection reuse: a pooled TLS connection to this address may carry another host's SNI
                    headers={
                        "Host": current.netloc.decode("ascii"),
                        "User-Agent": USER_AGENT,
                        "Accept-Encoding": ACCEPT_ENCODING,
                        "Connection": "close",
                    },
                    extensions={"sni_hostname": host} if current.scheme == "https" else None,
                )
                try:
                    response = await client.send(request, stream=True, follow_redirects=False)
                    try:
                        if response.is_redirect:
                            location = response.headers.get("location")
                            if not location:
                                raise WebSearchError(
                                    f"{current} answered HTTP {response.status_code} without a Location"
                                )
                            current = _parse(str(current.join(location)))
                            continue
                        return (*await _read(response, current, max_bytes, accept), current)
                    finally:
                        await response.aclose()
                except httpx.TransportError as exc:  # refused, reset or dropped: worth a retry
                    raise TransientWebSearchError(f"cannot fetch {current}: {exc}") from exc
                except httpx.HTTPError as exc:
                    raise WebSearchError(f"cannot fetch {current}: {exc}") from exc
            raise WebSearchError(f"too many redirects from {url} (more than {MAX_REDIRECTS})")
    except TimeoutError:
        raise TransientWebSearchError(f"timed out after {timeout:g} s fetching {current}") from None


async def _read(
    response: httpx.Response, url: httpx.URL, max_bytes: int, accept: tuple[tuple[str, ...], str]
) -> tuple[bytes, str, str | None]:
    """(body, media type, charset) of a successful response of an accepted type, under the byte cap."""
    if not response.is_success:
        status = response.status_code
        kind = TransientWebSearchError if status in (408, 429) or status >= 500 else WebSearchError
        raise kind(f"{url} answered HTTP {status}")
    media_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
    types, name = accept
    if media_type not in types:
        raise WebSearchError(f"refusing {url}: content type {media_type or 'missing'} is not {name}")
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise WebSearchError(f"refusing {url}: {declared} bytes is over the {max_bytes}-byte cap")
    decoders = _decoders(response.headers.get("content-encoding", ""), url)
    pieces: list[bytes] = []
    size = 0
    async for chunk in response.aiter_raw():  # as sent: decoded here, a piece at a time, so the cap is of the page
        for piece in _decoded(decoders, chunk):
            size += len(piece)
            if size > max_bytes:
                raise WebSearchError(f"refusing {url}: the page is over the {max_bytes}-byte cap (decompressed)")
            pieces.append(piece)
    return b"".join(pieces), media_type, response.charset_encoding


class _Inflater:
    """gzip or deflate, decoded at most `DECODED_PIECE` bytes a step (zlib's max_length)."""

    def __init__(self, encoding: str, url: httpx.URL):
        self.encoding, self.url = encoding, url
        # deflate is meant to be zlib-wrapped (RFC 9110), but some servers send it raw: decided on the first bytes
        self.raw_fallback = encoding == "deflate"
        self.inflate = zlib.decompressobj(zlib.MAX_WBITS | 16 if encoding == "gzip" else zlib.MAX_WBITS)

    def feed(self, data: bytes) -> Iterator[bytes]:
        while True:
            try:
                piece = self.inflate.decompress(data, DECODED_PIECE)
            except zlib.error as exc:
                if not self.raw_fallback:
                    raise WebSearchError(f"cannot decode {self.url}: a bad {self.encoding} body ({exc})") from exc
                self.raw_fallback = False
                self.inflate = zlib.decompressobj(-zlib.MAX_WBITS)
                continue
            if data:
                self.raw_fallback = False
            data = self.inflate.unconsumed_tail
            if piece:
                yield piece
            if not data and len(piece) < DECODED_PIECE:
                return


def _decoders(header: str, url: httpx.URL) -> list[_Inflater]:
    """The decoders a Content-Encoding header asks for, in the order to apply them."""
    decoders: list[_Inflater] = []
    for coding in reversed([c.strip().lower() for c in header.split(",") if c.strip()]):
        if coding in ("gzip", "x-gzip", "deflate"):
            decoders.append(_Inflater("deflate" if coding == "deflate" else "gzip", url))
        elif coding != "identity":
            raise WebSearchError(f"refusing {url}: content encoding {coding} was not asked for ({ACCEPT_ENCODING})")
    return decoders


def _decoded(decoders: list[_Inflater], data: bytes) -> Iterator[bytes]:
    """`data` through each decoder in turn, lazily: no step holds more than a piece of decoded bytes."""
    if not decoders:
        yield data
        return
    for piece in decoders[0].feed(data):
        yield from _decoded(decoders[1:], piece)


def _run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine from sync code, also from a thread whose event loop is running."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with ThreadPoolExecutor(max_workers=1) as pool:  # asyncio.run refuses to nest in a running loop
        return pool.submit(asyncio.run, coroutine).result()


def decode(body: bytes, charset: str | None) -> str:
    try:
        return body.decode(charset or "utf-8", errors="replace")
    except LookupError:  # an unknown charset name
        return body.decode("utf-8", errors="replace")


def _split(text: str, separator: str) -> list[str]:
    paragraphs = (" ".join(part.split()) for part in re.split(separator, text))
    return [p for p in paragraphs if len(p.split()) >= MIN_WORDS]


def _extract(body: bytes, media_type: str, charset: str | None, url: str) -> tuple[str | None, list[str]]:
    if media_type in TEXT_TYPES:
        return None, _split(decode(body, charset), r"\n\s*\n")  # plain text is often hard-wrapped
    try:
        import trafilatura
    except ImportError as exc:  # trafilatura needs lxml_html_clean with lxml >= 5.2
        raise WebSearchError(f"cannot extract pages: trafilatura does not import ({exc})") from exc
    tree = trafilatura.load_html(decode(body, charset) if charset else body)
    if tree is None:
        return None, []
    metadata = trafilatura.extract_metadata(tree, default_url=url)  # before extract, which prunes the tree
    title = (metadata.title if metadata else None) or (tree.findtext(".//title") or "").strip() or None
    text = trafilatura.extract(tree, url=url, output_format="txt", include_comments=False, include_tables=False)
    return title, _split(text or "", r"\n")


def _new_client() -> httpx.AsyncClient:
    # no environment proxies: the address check must be about the host we really connect to
    return httpx.AsyncClient(trust_env=False, follow_redirects=False)


def _in_thread(work: Callable[[], T]) -> asyncio.Future[T]:
    """`work()` in a daemon thread of its own, as a future of the running loop. A thread cannot be stopped: one
    given up on runs on to its end, but nobody waits for it, not even the interpreter's exit."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(result: Any, exc: BaseException | None) -> None:
        if future.done():  # given up on
            return
        if exc is not None:
            future.set_exception(exc)
        else:
            future.set_result(result)

    def run() -> None:
        try:
            result, exc = work(), None
        except BaseException as error:  # handed to the waiting coroutine
            result, exc = None, error
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits any more
            loop.call_soon_threadsafe(settle, result, exc)

    threading.Thread(target=run, name="crag-extract", daemon=True).start()
    return future


async def _fetch_pages(
    urls: list[str],
    *,
    timeout: float,
    max_bytes: int,
    allow_private: bool,
    max_workers: int,
    client: httpx.AsyncClient | None,
    accept: tuple[tuple[str, ...], str] = PAGE_TYPES,
    on_done: Callable[[], object] | None = None,
    extract: Callable[[tuple[bytes, str, str | None, httpx.URL], str], Any] | None = None,
) -> list[Any]:
    """Download every URL, at most `max_workers` at once: a download or the exception that stopped it. With
    `extract`, what it makes of (download, URL) instead, run in a thread within the same `timeout` as the download:
    text extraction from a hostile page can be as slow as its download."""
    if timeout <= 0 or max_bytes <= 0 or max_workers < 1:
        raise ValueError("timeout, max_bytes and max_workers must be positive")
    slots = asyncio.Semaphore(max_workers)
    shared = client or _new_client()  # one pool for all pages
    loop = asyncio.get_running_loop()

    async def one(url: str):
        async with slots:
            try:
                deadline = loop.time() + timeout
                got = await _download(
                    shared,
                    url,
                    timeout=timeout,
                    max_bytes=max_bytes,
                    allow_private=allow_private,
                    accept=accept,
                    deadline=deadline,
                )
                if extract is None:
                    return got
                try:
                    async with asyncio.timeout_at(deadline):
                        return await _in_thread(lambda: extract(got, url))
                except TimeoutError:
                    raise WebSearchError(
                        f"timed out after {timeout:g} s extracting the text of {got[3]} (one deadline for the"
                        " download and the extraction)"
                    ) from None
            except Exception as exc:  # handed back, so one page never sinks the others
                return exc
            finally:
                if on_done:
                    on_done()

    try:
        return list(await asyncio.gather(*(one(url) for url in urls)))
    finally:
        if client is None:
            await shared.aclose()


def _paragraphs(page: tuple[bytes, str, str | None, httpx.URL], url: str) -> tuple[str | None, list[str]]:
    body, media_type, charset, final = page
    return _extract(body, media_type, charset, str(final))


def _paragraph(text: str, title: str, url: str) -> Document:
    return passage(titled(text, title), title=title, source=url)


def text_passages(text: str, title: str, url: str) -> list[Document]:
    """A page's plain text as `fetch_all` makes passages of a page; a stub with no long paragraph is one whole."""
    if paragraphs := _split(text, r"\n"):
        return [_paragraph(p, title, url) for p in paragraphs]
    return [_paragraph(" ".join(text.split()), title, url)] if text.strip() else []


def download_many(
    urls: list[str],
    *,
    timeout: float,
    max_bytes: int = MAX_BYTES,
    allow_private: bool = False,
    accept: tuple[tuple[str, ...], str] = PAGE_TYPES,
    max_workers: int = 4,
    on_done: Callable[[], object] | None = None,
    client: httpx.AsyncClient | None = None,
    extract: Callable[[tuple[bytes, str, str | None, httpx.URL], str], Any] | None = None,
) -> list[Any]:
    """Each URL's (body, media type, charset, final URL), or the exception that stopped it (not raised).
    Failures worth a retry are `TransientWebSearchError`: a timeout, a dropped connection, HTTP 408, 429, 5xx.
    With `extract`, what it makes of (that download, the URL), within the same `timeout` (`_fetch_pages`)."""
    if not urls:
        return []
    return _run(
        _fetch_pages(
            urls,
            timeout=timeout,
            max_bytes=max_bytes,
            allow_private=allow_private,
            max_workers=max_workers,
            client=client,
            accept=accept,
            on_done=on_done,
            extract=extract,
        )
    )


def without_credentials(url: str) -> str:
    """`url` without a password, for errors."""
    parts = urlsplit(url)
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl() if "@" in parts.netloc else url


def _snippet(result: Document) -> list[Document]:
    """The search hit's own text as its one passage."""
    if not result.page_content.strip():
        return []
    return [_paragraph(result.page_content.strip(), title_of(result), source_of(result))]


def fetch_all(
    results: list[Document],
    *,
    timeout: float = 10.0,
    max_bytes: int = MAX_BYTES,
    allow_private: bool = False,
    max_workers: int = 8,
    client: httpx.AsyncClient | None = None,
) -> tuple[list[Document], list[str]]:
    """Fetch the http(s) results concurrently: (passages in result order, "URL: why" errors). A failed or
    empty page's snippet stands in for it; non-http results are used as they are."""
    if timeout <= 0 or max_bytes <= 0 or max_workers < 1:
        raise ValueError("timeout, max_bytes and max_workers must be positive")
    seen: set[str] = set()
    urls = [source_of(r) for r in results]
    unique = []
    for r, url in zip(results, urls):
        if url not in seen:
            seen.add(url)
            unique.append((r, url))
    per_result: list[list[Document]] = [[] for _ in unique]
    web = [i for i, (_, url) in enumerate(unique) if urlsplit(url).scheme.lower() in ("http", "https")]
    for i in set(range(len(unique))) - set(web):
        per_result[i] = _snippet(unique[i][0])
    errors: list[str] = []
    pages = (
        _run(
            _fetch_pages(
                [unique[i][1] for i in web],
                timeout=timeout,
                max_bytes=max_bytes,
                allow_private=allow_private,
                max_workers=max_workers,
                client=client,
                extract=_paragraphs,
            )
        )
        if web
        else []
    )
    for i, page in zip(web, pages):
        result, url = unique[i]
        shown = without_credentials(url)
        if isinstance(page, Exception):  # anything: a page must never sink the search
            reason = str(page) if isinstance(page, WebSearchError) else f"{type(page).__name__}: {page}"
            errors.append(f"{shown}: {reason}")
            per_result[i] = _snippet(result)
            continue
        page_title, paragraphs = page
        if not paragraphs:
            errors.append(f"{shown}: no paragraphs of {MIN_WORDS}+ words; using the snippet")
            per_result[i] = _snippet(result)
            continue
        title = page_title or title_of(result)
        per_result[i] = [_paragraph(p, title, url) for p in paragraphs]
    return [paragraph for found in per_result for paragraph in found], errors


def cap_paragraphs(passages: list[Document], limit: int = MAX_PARAGRAPHS) -> tuple[list[Document], str | None]:
    """At most `limit` of a search's fetched passages, fairly: each page's first, then each page's second, and so
    on, pages in result order; kept in their order. Also what was dropped, as an error to report, or None."""
    if len(passages) <= limit:
        return passages, None
    pages: dict[str, list[int]] = {}
    for i, found in enumerate(passages):
        pages.setdefault(source_of(found), []).append(i)
    kept: set[int] = set()
    for turn in range(max(len(page) for page in pages.values())):
        for page in pages.values():
            if turn < len(page) and len(kept) < limit:
                kept.add(page[turn])
    dropped = len(passages) - limit
    pages_cut = sum(1 for page in pages.values() if not set(page) <= kept)
    return [p for i, p in enumerate(passages) if i in kept], (
        f"{dropped} of {len(passages)} fetched paragraphs not scored: at most {limit} a search, taken from each"
        f" page in turn ({pages_cut} of {len(pages)} pages cut short)"
    )
