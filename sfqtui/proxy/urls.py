"""An upstream's URL: the base the proxy puts each request's path after, and its label in the metrics."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from sfqtui.errors import InputError

# The last parts of an endpoint's path: what a base URL never ends with.
ENDPOINTS = ("/chat/completions", "/completions", "/models", "/embeddings", "/responses", "/metrics")


def base_url(url: str) -> str:
    """The base URL requests' paths (``/v1/chat/completions``) go after: ``url`` without a
    trailing ``/v1``; InputError for anything but http(s), and for an endpoint's URL, whose
    requests would all get the upstream's 404."""
    parsed = urlsplit(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise InputError(f"--upstream {url!r}: expected an http:// or https:// URL")
    path = parsed.path.rstrip("/")
    parts = path.split("/")
    endpoint = next((e for e in ENDPOINTS if path.endswith(e)), None)
    if endpoint is not None or ("v1" in parts and parts[-1] != "v1"):
        prefix = "/".join(parts[: parts.index("v1")]) if "v1" in parts else path[: -len(endpoint or "")]
        root = urlunsplit((parsed.scheme, parsed.netloc, prefix, "", ""))
        raise InputError(f"--upstream {url!r}: that is an endpoint; give the server's base URL, e.g. {root} or {root}/v1 "
                         "(the proxy adds each request's path, /v1/chat/completions, to it)")
    if path.endswith("/v1"):
        path = path[: -len("/v1")]
    return urlunsplit((parsed.scheme, parsed.netloc, path, "", ""))


def label_of(base: str) -> str:
    """An upstream as metrics name it: host, port and path, never credentials in the URL."""
    parsed = urlsplit(base)
    host = f"[{parsed.hostname}]" if parsed.hostname and ":" in parsed.hostname else parsed.hostname or ""
    return host + (f":{parsed.port}" if parsed.port else "") + parsed.path
