"""Run spanscore's CLI from an extracted source tree, past the editable install of the venv.

    git -C OTHER_WORKTREE archive COMMIT spanscore | tar -x -C DIR
    .venv/bin/python bench/smalln_check/launch.py DIR report compare --scores-csv F ...

Used for "after": a builder's worktree keeps changing while a long run goes on, a commit does not.
"""

import sys

src = sys.argv.pop(1)
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
sys.path.insert(0, src)
import spanscore  # noqa: E402
from spanscore.cli import main  # noqa: E402

assert spanscore.__file__.startswith(src), spanscore.__file__
sys.argv[0] = "spanscore"
sys.exit(main())
