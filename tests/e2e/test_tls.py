"""TLS on the OTLP receivers and the API, with a self-signed certificate made by openssl."""

from __future__ import annotations

import asyncio
import json
import shutil
import ssl
import subprocess
from pathlib import Path

import aiohttp
import grpc
import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

from spanscore.config import ServiceConfig
from spanscore.server.listeners_config import TlsConfig
from spanscore.server.service import Service
from tests.e2e.otlp_clients import record_agent_trace
from tests.e2e.test_http_json_and_errors import otlp_json

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is needed to make a certificate")


@pytest.fixture
def certificate(tmp_path: Path) -> TlsConfig:
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
         "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return TlsConfig(cert_file=cert, key_file=key)


async def test_tls_on_every_listener(service_config: ServiceConfig, certificate: TlsConfig) -> None:
    service_config.collector.grpc.tls = certificate
    service_config.collector.http.tls = certificate
    service_config.api.tls = certificate
    service = Service(service_config)
    await service.start()
    try:
        credentials = grpc.ssl_channel_credentials(certificate.cert_file.read_bytes())
        exporter = OTLPSpanExporter(endpoint=f"localhost:{service.grpc.port}", credentials=credentials, timeout=10)
        result = await asyncio.to_thread(exporter.export, record_agent_trace("tls"))
        exporter.shutdown()
        assert result.name == "SUCCESS"

        context = ssl.create_default_context(cafile=str(certificate.cert_file))
        async with aiohttp.ClientSession() as session:
            async with session.post(
                f"https://127.0.0.1:{service.http.port}/v1/traces", json=otlp_json(), ssl=context
            ) as response:
                assert response.status == 200
            async with session.post(
                f"https://127.0.0.1:{service.api.port}/api/v1/query",
                json={"sql": "SELECT count() AS n FROM otel_traces"},
                ssl=context,
            ) as response:
                assert response.status == 200
                assert json.loads(await response.read())["data"][0]["n"] in (3, "3")
            # plaintext HTTP against the TLS port fails instead of being served
            with pytest.raises(aiohttp.ClientError):
                async with session.post(f"http://127.0.0.1:{service.http.port}/v1/traces", json=otlp_json()):
                    pass
    finally:
        await service.shutdown()


async def test_query_api_token(service_config: ServiceConfig) -> None:
    service_config.api.auth_tokens = ["reader"]
    service_config.collector.auth_tokens = ["writer"]
    service = Service(service_config)
    await service.start()
    url = f"http://127.0.0.1:{service.api.port}/api/v1/query"
    try:
        async with aiohttp.ClientSession() as session:
            for headers, expected in (
                ({}, 401),
                ({"Authorization": "Bearer writer"}, 401),  # ingestion tokens do not open the query API
                ({"Authorization": "Bearer reader"}, 200),
            ):
                async with session.post(url, json={"sql": "SELECT 1"}, headers=headers) as response:
                    assert response.status == expected
    finally:
        await service.shutdown()
