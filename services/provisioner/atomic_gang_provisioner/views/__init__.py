"""Typed, read-only views of the raw Kubernetes objects the provisioner reads.

The caches hold plain JSON dicts (``KubeObject``). A view wraps one and names the
fields we read as properties (``Node(obj).pool``), in place of chains such as
``((obj.get("metadata") or {}).get("labels") or {}).get(POOL)``. A view parses
nothing when it is made and copies nothing: each property does the ``get`` the
chain did, so it costs what the chain cost, on paths that run for every Node event
of a large cluster. An absent or null section (``status: null``, no ``metadata``)
reads as empty, as ``or {}`` did.

One module per kind. The Workload's view stays in ``workload.view`` (an eager,
frozen model the decision reads); our own GangNodePool is parsed by ``api`` and
read raw, where a parse would cost too much, through ``pool_object``.
"""
