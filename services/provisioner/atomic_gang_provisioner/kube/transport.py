"""HTTP to the apiserver through the official client's ``ApiClient``.

The official client loads the kubeconfig or in-cluster config (certificates,
tokens, exec plugins, token refresh) and owns the urllib3 pool; requests are
built with ``param_serialize`` and sent with ``call_api``, so bodies stay dicts
and responses are decoded with orjson, never into generated models. Streams
(watches) expose a ``close`` that is safe from another thread.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, TypedDict

import orjson
import urllib3
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException

from atomic_gang_provisioner.kube.api_errors import (
    KubeConfigError,
    TransportError,
    error_from_response,
)

Query = Sequence[tuple[str, str]]


class Request(TypedDict, total=False):
    """The optional parts of :meth:`Transport.request`, for a caller that passes them on."""

    query: Query
    body: Any
    content_type: str


DEFAULT_TIMEOUT = 30.0
POOL_SIZE = 32  # informers hold one connection each; workers and the elector need more


class Transport:
    """Authenticated JSON requests and line streams against one apiserver."""

    def __init__(self, api_client: Any) -> None:
        self._api = api_client

    @classmethod
    def from_kubeconfig(
        cls, path: str | Path | None = None, *, context: str | None = None
    ) -> Transport:
        conf = k8s_client.Configuration()
        try:
            k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
                config_file=None if path is None else str(path),
                context=context,
                client_configuration=conf,
                persist_config=False,
            )
        except (k8s_config.ConfigException, OSError, ValueError) as exc:
            if path is not None:
                where = str(path)
            elif os.environ.get("KUBECONFIG"):
                where = f"$KUBECONFIG={os.environ['KUBECONFIG']}"
            else:
                where = "~/.kube/config"
            raise KubeConfigError(f"cannot load kubeconfig {where}: {exc}") from exc
        return cls._from_configuration(conf)

    @classmethod
    def in_cluster(cls) -> Transport:
        conf = k8s_client.Configuration()
        try:
            k8s_config.load_incluster_config(client_configuration=conf)  # type: ignore[no-untyped-call]
        except (k8s_config.ConfigException, OSError) as exc:
            msg = f"not running in a cluster and no kubeconfig given: {exc}"
            raise KubeConfigError(msg) from exc
        return cls._from_configuration(conf)

    @classmethod
    def _from_configuration(cls, conf: Any) -> Transport:
        conf.connection_pool_maxsize = POOL_SIZE
        return cls(k8s_client.ApiClient(configuration=conf))

    @property
    def host(self) -> str:
        return str(self._api.configuration.host)

    def close(self) -> None:
        self._api.close()

    def _send(
        self,
        method: str,
        path: str,
        *,
        query: Query,
        body: Any,
        content_type: str | None,
        timeout: float | tuple[float, float] | None,
    ) -> Any:
        headers = {"Accept": "application/json"}
        if content_type is not None:
            headers["Content-Type"] = content_type
        m, url, hdrs, data, _ = self._api.param_serialize(
            method=method,
            resource_path=path,
            query_params=list(query),
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        try:
            return self._api.call_api(
                m, url, header_params=hdrs, body=data, _request_timeout=timeout
            )
        except ApiException as exc:  # the client wraps TLS errors this way
            raise TransportError(f"{method} {path}: {exc.reason}") from exc
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise TransportError(f"{method} {path}: {type(exc).__name__}: {exc}") from exc

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Query = (),
        body: Any = None,
        content_type: str = "application/json",
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> Any:
        """Send one request; return the decoded JSON answer or raise a :class:`KubeError`."""
        resp = self._send(
            method,
            path,
            query=query,
            body=body,
            content_type=content_type if body is not None else None,
            timeout=timeout,
        )
        try:
            data = resp.read()
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise TransportError(f"{method} {path}: reading the answer: {exc}") from exc
        finally:
            resp.response.release_conn()
        if not 200 <= resp.status < 300:
            raise error_from_response(resp.status, data)
        return orjson.loads(data) if data else None

    def stream(self, path: str, *, query: Query, read_timeout: float) -> LineStream:
        """Open a GET whose body is newline-delimited JSON (a watch)."""
        resp = self._send(
            "GET", path, query=query, body=None, content_type=None, timeout=(10.0, read_timeout)
        )
        if not 200 <= resp.status < 300:
            try:
                data = resp.read()
            finally:
                resp.response.release_conn()
            raise error_from_response(resp.status, data)
        return LineStream(resp.response)


class LineStream:
    """Decoded JSON lines of a chunked response; ``close`` may come from any thread."""

    def __init__(self, response: urllib3.BaseHTTPResponse) -> None:
        self._resp = response
        self._closed = threading.Event()

    def __iter__(self) -> Iterator[Any]:
        buf = b""
        try:
            for chunk in self._resp.stream(None):
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    if line.strip():
                        yield orjson.loads(line)
        except (urllib3.exceptions.HTTPError, OSError, ValueError) as exc:
            if not self._closed.is_set():
                raise TransportError(f"watch stream broke: {type(exc).__name__}: {exc}") from exc
        finally:
            self._finish()

    def close(self) -> None:
        """End the stream; a reader blocked in ``__iter__`` returns promptly."""
        if self._closed.is_set():
            return
        self._closed.set()
        with contextlib.suppress(OSError, AttributeError):
            self._resp.shutdown()  # unblocks a read in progress on another thread

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def _finish(self) -> None:
        self._closed.set()
        self._resp.close()
        self._resp.release_conn()

    def __enter__(self) -> LineStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
        self._finish()
