"""Fetch search-result pages and split them into titled paragraphs, as the paper's page loader does.

The URLs come from a search engine, i.e. from strangers, so fetching is an SSRF surface: only
http(s) without credentials, every address a host resolves to must be public (checked again on
each redirect hop, which is why redirects are followed by hand), and the connection goes to the
very address that was checked (so DNS cannot answer differently the second time). Bodies are
streamed under a byte cap and a deadline, and only HTML or plain text is read.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx

from crag.backends.web import WebResult, WebSearchError

MAX_REDIRECTS = 5
MIN_WORDS = 10  # shorter lines are menus, captions and buttons, not knowledge
HTML_TYPES = ("text/html", "application/xhtml+xml")
TEXT_TYPES = ("text/plain",)
USER_AGENT = "crag/0.1 (corrective RAG page fetcher)"

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class WebPassage:
    """One paragraph for the evaluator: `text` is "{title}: {paragraph}" when a title is known.

    `fetched` is False when the search snippet (or a local record) stands in for the page.
    """

    text: str
    title: str
    url: str
    fetched: bool


def _refusal(address: IPAddress) -> str | None:
    """Why an address must not be fetched from, or None if it is a public one."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped  # ::ffff:127.0.0.1 is 127.0.0.1
    for kind in ("loopback", "link_local", "unspecified", "multicast", "private", "reserved"):
        if getattr(address, f"is_{kind}"):
            return kind.replace("_", "-")
    return None if address.is_global else "not globally routable"  # e.g. 100.64.0.0/10


def _resolve(host: str, port: int, allow_private: bool) -> str:
    """The address to connect to, once every address `host` resolves to has passed the check."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
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


def _remaining(deadline: float, timeout: float, url: httpx.URL) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise WebSearchError(f"timed out after {timeout:g} s fetching {url}")
    return left


def _download(
    client: httpx.Client, url: str, *, timeout: float, max_bytes: int, allow_private: bool
) -> tuple[bytes, str, str | None, httpx.URL]:
    """(body, media type, charset, final URL), following at most MAX_REDIRECTS checked redirects."""
    deadline = time.monotonic() + timeout
    current = _parse(url)
    for _ in range(MAX_REDIRECTS + 1):
        host = current.raw_host.decode("ascii")
        address = _resolve(host, current.port or (443 if current.scheme == "https" else 80), allow_private)
        request = client.build_request(
            "GET",
            current.copy_with(host=address),  # pinned to the checked address
            # no connection reuse: a pooled TLS connection to this address may carry another host's SNI
            headers={"Host": current.netloc.decode("ascii"), "User-Agent": USER_AGENT, "Connection": "close"},
            extensions={"sni_hostname": host} if current.scheme == "https" else None,
            timeout=httpx.Timeout(_remaining(deadline, timeout, current)),
        )
        try:
            response = client.send(request, stream=True, follow_redirects=False)
            try:
                if response.is_redirect:
                    current = _parse(str(current.join(response.headers["location"])))
                    continue
                if not response.is_success:
                    raise WebSearchError(f"{current} answered HTTP {response.status_code}")
                media_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
                if media_type not in HTML_TYPES + TEXT_TYPES:
                    raise WebSearchError(f"refusing {current}: content type {media_type or 'missing'} is not HTML or text")
                declared = response.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > max_bytes:
                    raise WebSearchError(f"refusing {current}: {declared} bytes is over the {max_bytes}-byte cap")
                body = bytearray()
                for chunk in response.iter_bytes():  # decompressed, so the cap also stops gzip bombs
                    body += chunk
                    if len(body) > max_bytes:
                        raise WebSearchError(f"refusing {current}: the page is over the {max_bytes}-byte cap")
                    _remaining(deadline, timeout, current)  # a slow trickle must not outlive the deadline
                return bytes(body), media_type, response.charset_encoding, current
            finally:
                response.close()
        except httpx.TimeoutException as exc:
            raise WebSearchError(f"timed out after {timeout:g} s fetching {current}") from exc
        except httpx.HTTPError as exc:
            raise WebSearchError(f"cannot fetch {current}: {exc}") from exc
    raise WebSearchError(f"too many redirects from {url} (more than {MAX_REDIRECTS})")


def _decode(body: bytes, charset: str | None) -> str:
    try:
        return body.decode(charset or "utf-8", errors="replace")
    except LookupError:  # an unknown charset name
        return body.decode("utf-8", errors="replace")


def _split(text: str, separator: str) -> list[str]:
    paragraphs = (" ".join(part.split()) for part in re.split(separator, text))
    return [p for p in paragraphs if len(p.split()) >= MIN_WORDS]


def _extract(body: bytes, media_type: str, charset: str | None, url: str) -> tuple[str | None, list[str]]:
    """(page title or None, paragraphs) of a downloaded page."""
    if media_type in TEXT_TYPES:
        return None, _split(_decode(body, charset), r"\n\s*\n")  # plain text is often hard-wrapped
    try:
        import trafilatura
    except ImportError as exc:  # trafilatura needs lxml_html_clean with lxml >= 5.2
        raise WebSearchError(f"cannot extract pages: trafilatura does not import ({exc})") from exc
    tree = trafilatura.load_html(_decode(body, charset) if charset else body)
    if tree is None:
        return None, []
    metadata = trafilatura.extract_metadata(tree, default_url=url)  # before extract, which prunes the tree
    title = (metadata.title if metadata else None) or (tree.findtext(".//title") or "").strip() or None
    text = trafilatura.extract(tree, url=url, output_format="txt", include_comments=False, include_tables=False)
    return title, _split(text or "", r"\n")


def _with_title(title: str | None, paragraph: str) -> str:
    return f"{title}: {paragraph}" if title else paragraph


def _new_client() -> httpx.Client:
    # no environment proxies: the address check must be about the host we really connect to
    return httpx.Client(trust_env=False, follow_redirects=False)


def _fetch_page(
    url: str, *, timeout: float, max_bytes: int, allow_private: bool, client: httpx.Client | None
) -> tuple[str | None, list[str]]:
    if timeout <= 0 or max_bytes <= 0:
        raise ValueError("timeout and max_bytes must be positive")
    own = client is None
    client = client or _new_client()
    try:
        body, media_type, charset, final = _download(
            client, url, timeout=timeout, max_bytes=max_bytes, allow_private=allow_private
        )
    finally:
        if own:
            client.close()
    return _extract(body, media_type, charset, str(final))


def fetch_paragraphs(
    url: str,
    *,
    timeout: float = 10.0,
    max_bytes: int = 2_000_000,
    allow_private: bool = False,
    client: httpx.Client | None = None,
    title: str | None = None,
) -> list[str]:
    """The page's paragraphs of MIN_WORDS+ words, each as "{title}: {paragraph}" when titled.

    `timeout` bounds the whole fetch, redirects included; `title` is used when the page has
    none. `allow_private` lifts the address check (tests, intranets). Raises `WebSearchError`.
    """
    page_title, paragraphs = _fetch_page(
        url, timeout=timeout, max_bytes=max_bytes, allow_private=allow_private, client=client
    )
    return [_with_title(page_title or title, p) for p in paragraphs]


def _snippet(result: WebResult) -> list[WebPassage]:
    if not result.content.strip():
        return []
    return [WebPassage(_with_title(result.title, result.content.strip()), result.title, result.url, False)]


def fetch_all(
    results: list[WebResult],
    *,
    timeout: float = 10.0,
    max_bytes: int = 2_000_000,
    allow_private: bool = False,
    max_workers: int = 4,
    client: httpx.Client | None = None,
) -> tuple[list[WebPassage], list[str]]:
    """Fetch the http(s) results concurrently: (passages in result order, "URL: why" errors).

    Never raises for a page: a failed (or empty) page is recorded in the errors and its search
    snippet stands in for it. Non-http results (local records) are used as they are, unfetched,
    and a URL that appears twice is used once.
    """
    if timeout <= 0 or max_bytes <= 0 or max_workers < 1:
        raise ValueError("timeout, max_bytes and max_workers must be positive")
    seen: set[str] = set()
    unique = [r for r in results if not (r.url in seen or seen.add(r.url))]
    per_result: list[list[WebPassage]] = [[] for _ in unique]
    web = [i for i, r in enumerate(unique) if urlsplit(r.url).scheme.lower() in ("http", "https")]
    for i in set(range(len(unique))) - set(web):
        per_result[i] = _snippet(unique[i])
    errors: list[str] = []
    if web:
        own = client is None
        shared = client or _new_client()  # httpx clients are thread-safe; one pool for all pages
        try:
            with ThreadPoolExecutor(max_workers=max(1, min(max_workers, len(web)))) as pool:
                futures = {
                    i: pool.submit(
                        _fetch_page, unique[i].url, timeout=timeout, max_bytes=max_bytes,
                        allow_private=allow_private, client=shared,
                    )
                    for i in web
                }
                for i, future in futures.items():
                    result = unique[i]
                    try:
                        page_title, paragraphs = future.result()
                    except Exception as exc:  # anything: a page must never sink the search
                        reason = str(exc) if isinstance(exc, WebSearchError) else f"{type(exc).__name__}: {exc}"
                        errors.append(f"{result.url}: {reason}")
                        per_result[i] = _snippet(result)
                        continue
                    if not paragraphs:
                        errors.append(f"{result.url}: no paragraphs of {MIN_WORDS}+ words; using the snippet")
                        per_result[i] = _snippet(result)
                        continue
                    title = page_title or result.title
                    per_result[i] = [WebPassage(_with_title(title, p), title, result.url, True) for p in paragraphs]
        finally:
            if own:
                shared.close()
    return [passage for passages in per_result for passage in passages], errors
