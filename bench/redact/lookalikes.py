"""Seeded look-alikes: strings shaped like personal data or secrets that must NOT be masked."""

from __future__ import annotations

import random
import string
import uuid
from collections.abc import Callable

from bench.redact import values


def lookalike(rng: random.Random, category: str) -> str:
    def d(n: int) -> str:
        return values.digits(rng, n)

    makers: dict[str, Callable[[], str]] = {
        "order": lambda: rng.choice(
            [f"ORD-{rng.randint(2019, 2025)}-{d(6)}", f"#{d(9)}", f"A{d(7)}-{d(2)}", f"SO{d(8)}"]
        ),
        "tracking": lambda: rng.choice(
            [
                f"1Z{values.chars(rng, string.ascii_uppercase + string.digits, 16)}",
                f"{d(4)} {d(4)} {d(4)}",
                f"JD{d(18)}",
                f"9400 {d(4)} {d(4)} {d(4)} {d(4)} {d(2)}",
            ]
        ),
        "version": lambda: rng.choice(
            [
                f"v{rng.randint(0, 4)}.{rng.randint(0, 40)}.{rng.randint(0, 20)}",
                f"{rng.randint(1, 3)}.{rng.randint(0, 12)}.{rng.randint(0, 9)}-rc.{rng.randint(1, 5)}",
                f"10.0.{rng.randint(17000, 22631)}.{rng.randint(1000, 4000)}",
                f"4.0.30319.{rng.randint(30000, 42000)}",
            ]
        ),
        "git_hash": lambda: values.chars(rng, values.HEX, rng.choice([7, 12, 40])),
        "sha256": lambda: values.chars(rng, values.HEX, 64),
        "uuid": lambda: str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "timestamp": lambda: rng.choice(
            [
                f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:"
                f"{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}.{d(3)}Z",
                str(rng.randint(1_600_000_000, 1_760_000_000)),
                str(rng.randint(1_600_000_000_000, 1_760_000_000_000)),
            ]
        ),
        "price": lambda: rng.choice(
            [
                f"${rng.randint(1, 9)},{d(3)}.{d(2)}",
                f"€{rng.randint(1, 999)},{d(2)}",
                f"EUR 2.{d(3)},{d(2)}",
                f"¥{rng.randint(1, 999)},{d(3)}",
                f"£{rng.randint(1, 99)}.{d(2)}",
            ]
        ),
        "product_code": lambda: rng.choice(
            [
                f"{d(3)}-{d(3)}-{d(4)}-X",
                f"PN {d(4)}-{d(3)}-{d(3)}",
                f"ISBN 978-{d(1)}-{d(3)}-{d(5)}-{d(1)}",
                f"HS {d(4)}.{d(2)}.{d(4)}",
                f"EAN {d(13)}",
            ]
        ),
        "luhn_invalid": lambda: values.luhn_invalid_16(rng),
        "request_id": lambda: rng.choice(
            [
                f"req_{values.chars(rng, values.HEX, 32)}",
                f"chatcmpl-{values.chars(rng, values.ALNUM, 29)}",
                f"msg_01{values.chars(rng, values.ALNUM, 22)}",
                f"trace_id={values.chars(rng, values.HEX, 32)}",
            ]
        ),
        "integrity": lambda: f"sha512-{values.chars(rng, values.ALNUM + '+/', 86)}==",
        "ssh_remote": lambda: (
            f"git@github.com:{rng.choice(['acme', 'northwind'])}/{rng.choice(['api', 'web', 'infra'])}.git"
        ),
        "oid": lambda: f"1.3.6.1.4.1.{rng.randint(300, 60000)}.{rng.randint(1, 9)}.{rng.randint(1, 9)}",
        "bic": lambda: rng.choice(["DEUTDEFF", "COBADEFFXXX", "BNPAFRPP", "NWBKGB2L", "UBSWCHZH80A"]),
    }
    return makers[category]()


LOOKALIKES = [
    "order",
    "tracking",
    "version",
    "git_hash",
    "sha256",
    "uuid",
    "timestamp",
    "price",
    "product_code",
    "luhn_invalid",
    "request_id",
    "integrity",
    "ssh_remote",
    "oid",
    "bic",
]
