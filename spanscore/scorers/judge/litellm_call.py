"""The one place spanscore imports litellm, so its process-wide settings are made once.

litellm fetches its price table from the network on import, and Anthropic's
beta-header table on a first Anthropic call, unless told to use the copies
bundled with the installed version; spanscore always uses the bundled copies
(a scoring service must start offline, price reproducibly, and talk to no
host but the judge it was given).
Debug banners on errors are switched off: the judge client logs its own.
litellm's loggers are held at WARNING unless ``LITELLM_LOG`` says otherwise.

OpenAI and OpenAI-compatible models (``openai/...``, any ``api_base``) go
through litellm's own HTTP handler instead of the openai SDK
(``EXPERIMENTAL_OPENAI_BASE_LLM_HTTP_HANDLER``): the same request, the same
response object and the same exception mapping, for 36 to 39% less CPU per
call (the SDK walks every request through its typed-dict transformer and
parses the answer into its own models before litellm converts it again; see
docs/judge.md). Both are defaults: an operator who sets either variable keeps
their value. Import litellm through this module only (``from
spanscore.scorers.judge.litellm_call import litellm``), so these come first.
"""

from __future__ import annotations

import gc
import logging
import os

# Nothing leaves the machine but the judge request (#32). litellm fetches files from the internet by
# itself: its price table on import, Anthropic's beta-header table on the first Anthropic call that needs
# a beta (synchronously, 5 s timeout: a first judgement stalled that long where outbound traffic is
# dropped), and more behind LITELLM_OFFLINE_MODE. The bundled copies are used instead. Set here, before
# the import, in every process that judges: the service, its judge workers and the CLI all import
# litellm through this module. An operator who sets a variable keeps their value.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS", "True")
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
os.environ.setdefault("EXPERIMENTAL_OPENAI_BASE_LLM_HTTP_HANDLER", "True")

import litellm

litellm.suppress_debug_info = True
if "LITELLM_LOG" not in os.environ:
    # litellm's loggers inherit the root level; at the service's default (INFO) every call would log
    # "LiteLLM completion() model=..." twice (litellm's own handler and the root's), about 1 ms per call.
    for _name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy"):
        logging.getLogger(_name).setLevel(logging.WARNING)

# Importing litellm leaves about 290,000 objects tracked by the cyclic collector, and every full
# collection walked them all: freezing them cut the CPU per judgement by 9 to 17% (in-process 5.9 ->
# 5.3 ms, judge workers 5.9 -> 4.9 ms). Frozen objects are still freed by reference counting.
gc.collect()
gc.freeze()

__all__ = ["litellm"]
