"""Child process of test_judge_offline: one faithfulness score per provider, in-process and in a judge worker.

Prints one JSON line per score (provider, transport, score, mode, calls, cost) for the parent to check.
"""

import asyncio
import json
import os
import sys

from spanscore.run import Run
from spanscore.scorers import build
from spanscore.scorers.judge.client import JudgeClient
from tests.fakes.fake_openai import Reply
from tests.fakes.fake_providers import FakeProviderServer

RUN = Run(input="q", output="a b c", context=["a", "b"])
CLAIMS = {"claims": ["a", "b", "c"]}
VERDICTS = {"verdicts": [{"verdict": v, "reason": "r"} for v in ("yes", "yes", "no")]}
# claude-haiku-4-5 is one litellm asks for native structured output (a beta header, whose table litellm
# fetches from the internet unless told not to); claude-3-5-haiku-latest one it sends a forced tool call.
MODELS = [
    ("anthropic", "anthropic/claude-haiku-4-5"),
    ("anthropic", "anthropic/claude-3-5-haiku-latest"),
    ("gemini", "gemini/gemini-judge"),
    ("ollama", "ollama_chat/llama-judge"),
]

FIELDS = ("provider", "port", "pid", "status", "score", "error", "judge_mode", "cost", "cost_usd", "input_tokens")


async def main(workers: int) -> None:
    client = JudgeClient(environ={"K": "key"}, worker_processes=workers)
    try:
        for kind, model in MODELS:
            async with FakeProviderServer(kind) as fake:
                fake.script(model.split("/", 1)[1], Reply.json(CLAIMS), Reply.json(VERDICTS))
                judge = {"api_base": fake.api_base, "api_key_env": "K", "timeout_s": 10}
                result = await build("faithfulness", model=model, judge=judge, client=client).arun(RUN)
                line = {"provider": kind, "port": fake.port, "pid": os.getpid(), **result.to_dict()}
                print(json.dumps({k: line.get(k) for k in FIELDS}))
    finally:
        await client.aclose()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
