"""The one place spanscore imports litellm, so its process-wide settings are made once.

litellm fetches its price table from the network on import unless told to
use the copy bundled with the installed version; spanscore always uses the
bundled copy (a scoring service must start offline and price reproducibly).
Debug banners on errors are switched off: the judge client logs its own.
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm

litellm.suppress_debug_info = True

__all__ = ["litellm"]
