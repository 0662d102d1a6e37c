"""``make demo``: the whole product locally. It arrives with the provisioner."""

from __future__ import annotations

import sys


def main() -> int:
    print(
        "make demo arrives with the provisioner; until then `make dev-up` starts the "
        "control plane, Kueue and our webhook"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
