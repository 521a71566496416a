"""`vault-cortex` as a subprocess that SIGKILLs itself at its N-th sleep journal checkpoint (the journal's
`checkpoint` seam): `python tests/integration/sleep_killed.py N sleep --vault V apply PLAN`."""

from __future__ import annotations

import os
import signal
import sys

from vault_cortex.sleep import journal


def main() -> int:
    left = int(sys.argv[1])
    opened = journal._Journal.__init__

    def tick() -> None:
        nonlocal left
        left -= 1
        if left <= 0:
            os.kill(os.getpid(), signal.SIGKILL)

    def init(self: journal._Journal, root: object, checkpoint: object) -> None:
        opened(self, root, tick)  # type: ignore[arg-type]

    journal._Journal.__init__ = init  # type: ignore[method-assign]
    from server.cli import main as cli

    return cli(sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
