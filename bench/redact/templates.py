# ruff: noqa: E501  (long literal texts and keys read better unbroken)
"""Hand-written shapes of agent traffic with slots; the generator fills the slots with seeded values.

Slots are written <<name>>. Sensitive slots: email, pemail (reserved-domain placeholder, optional), phone, card,
iban, nid (national id, preceded by the word naming it), ip, dip (documentation range, optional), secret,
awskey (an AWS access key id and its secret), urlcred (a URL whose user:pass@ part is labelled). Any look-alike
category from values.LOOKALIKES may be a slot too (<<order>>, <<sha256>>, ...): those are recorded, never labelled.
"""

TEMPLATES: list[tuple[str, str]] = [
    (
        "support_chat",
        "User: Hi, I was charged twice for order <<order>>. The card ending was <<card>>, can you check?\n"
        "Assistant: I'm sorry about that. I can see order <<order>> placed on <<timestamp>> for <<price>>. "
        "I'll send the confirmation to <<email>> once the refund is issued.",
    ),
    (
        "support_chat",
        "customer: my number changed, new one is <<phone>> and please stop calling the old one\n"
        "agent: Updated. Your ticket <<order>> is still open; tracking <<tracking>> shows it left the depot.",
    ),
    (
        "support_chat",
        "User: Please pay the refund to my account <<iban>> (BIC <<bic>>), name on account as before.\n"
        "Assistant: Thanks. The refund of <<price>> for <<order>> will arrive in 3-5 business days.",
    ),
    (
        "support_chat",
        "User: I can't log in. My email is <<email>> and my phone <<phone>>.\n"
        "Assistant: I've sent a reset link. Reference: <<request_id>>.",
    ),
    (
        "support_chat",
        "User: for the insurance form they asked my <<nid>>, is that safe to give you?\n"
        "Assistant: Please don't share identity numbers in chat. I have removed it from the case <<order>>.",
    ),
    (
        "support_chat",
        "User: the product code on the box is <<product_code>> and the serial is <<luhn_invalid>>\n"
        "Assistant: That matches model year 2023; firmware <<version>> fixes the pairing issue.",
    ),
    (
        "tool_args",
        '{"tool": "lookup_customer", "arguments": {"email": "<<email>>", "phone": "<<phone>>", '
        '"include_orders": true}}',
    ),
    (
        "tool_args",
        '{"name": "charge_card", "arguments": {"card_number": "<<card>>", "amount": "<<price>>", '
        '"idempotency_key": "<<uuid>>"}}',
    ),
    (
        "tool_args",
        '{"name": "create_payout", "arguments": {"iban": "<<iban>>", "reference": "<<order>>", '
        '"requested_at": "<<timestamp>>"}}',
    ),
    (
        "tool_args",
        '{"name": "http_request", "arguments": {"url": "https://api.partner.io/v2/orders/<<order>>", '
        '"headers": {"Authorization": "Bearer <<secret>>", "X-Request-Id": "<<uuid>>"}}}',
    ),
    (
        "tool_args",
        '{"name": "run_sql", "arguments": {"dsn": "<<urlcred>>", '
        '"query": "select id, total from orders where id = \'<<order>>\'"}}',
    ),
    (
        "tool_args",
        '{"name": "block_ip", "arguments": {"address": "<<ip>>", "reason": "credential stuffing", '
        '"ticket": "<<order>>"}}',
    ),
    (
        "tool_result",
        '{"customer": {"id": "cus_<<git_hash>>", "email": "<<email>>", "phone": "<<phone>>", '
        '"created": "<<timestamp>>"}, "orders": [{"id": "<<order>>", "total": "<<price>>", "tracking": "<<tracking>>"}]}',
    ),
    (
        "tool_result",
        '{"status": "ok", "request_id": "<<request_id>>", "data": {"ssn_last_verified": "<<timestamp>>", '
        '"document": "<<nid>>", "score": 0.82}}',
    ),
    (
        "tool_result",
        '{"payment_method": {"type": "card", "number": "<<card>>", "exp": "04/27"}, '
        '"billing_email": "<<email>>", "invoice": "<<order>>", "amount": "<<price>>"}',
    ),
    (
        "tool_result",
        '{"items": [{"sku": "<<product_code>>", "price": "<<price>>"}, {"sku": "<<product_code>>", '
        '"price": "<<price>>"}], "cart_id": "<<uuid>>", "updated": "<<timestamp>>"}',
    ),
    (
        "tool_result",
        '{"build": {"commit": "<<git_hash>>", "version": "<<version>>", "digest": "sha256:<<sha256>>", '
        '"finished_at": "<<timestamp>>"}}',
    ),
    (
        "rag_context",
        "[doc 3: refund-policy.md]\nRefunds are processed within 14 days. For disputes contact "
        "<<email>> or call <<phone>>. Quote your order number (e.g. <<order>>) in every message.\n"
        "[doc 7: api-guide.md]\nSet the header X-Api-Key to your key, for example <<pemail>> is the account owner.",
    ),
    (
        "rag_context",
        "[doc 12: onboarding.md]\nTo test the sandbox, use the card ⟦-luhn_invalid|4242 4242 4242 4241⟧ which is "
        "rejected, and the server at <<dip>>. Production runs <<version>> on commit <<git_hash>>.",
    ),
    (
        "rag_context",
        "[retrieved: crm note ⟦-timestamp|2024-02-19⟧]\nSpoke with the client; they moved to <<phone>>. "
        "Their supplier account <<iban>> is verified. Next review after release <<version>>.",
    ),
    (
        "rag_context",
        "[retrieved: wiki/Support/Escalation]\nEscalate to the on-call via <<email>>. "
        "Dashboards: build <<version>>, alert id <<uuid>>, OID <<oid>>.",
    ),
    (
        "code",
        'import os\nimport openai\n\nclient = openai.OpenAI(api_key="<<secret>>")\n'
        "# pinned in requirements: openai==<<version>> --hash=sha256:<<sha256>>\nresp = client.chat.completions.create("
        'model="gpt-4o", messages=msgs)\n',
    ),
    (
        "code",
        '# config/settings.py\nDATABASE_URL = "<<urlcred>>"\nSENTRY_RELEASE = "<<version>>"\n'
        'CACHE_KEY_PREFIX = "<<git_hash>>"\n',
    ),
    ("code", "[default]\naws_access_key_id = <<awskey>>\nregion = eu-central-1\n# rotated <<timestamp>>\n"),
    (
        "code",
        '"node_modules/left-pad": {\n  "version": "<<version>>",\n  "resolved": '
        '"https://registry.npmjs.org/left-pad/-/left-pad-1.3.0.tgz",\n  "integrity": "<<integrity>>"\n}',
    ),
    (
        "code",
        "$ git log --oneline -3\n<<git_hash>> Fix retry on 429\n<<git_hash>> Bump version to <<version>>\n"
        "<<git_hash>> Merge branch 'main' of <<ssh_remote>>",
    ),
    (
        "code",
        "export GITHUB_TOKEN=<<secret>>\nexport APP_VERSION=<<version>>\ndocker pull "
        "ghcr.io/acme/api@sha256:<<sha256>>",
    ),
    (
        "code",
        'def test_checkout():\n    order = make_order(id="<<order>>", total="<<price>>")\n'
        '    assert order.card_ref == "<<luhn_invalid>>"  # not a real card: fails Luhn\n'
        '    assert order.created == "<<timestamp>>"',
    ),
    (
        "log",
        "<<timestamp>> INFO  http request_id=<<uuid>> client_ip=<<ip>> user=<<email>> path=/v1/orders/<<order>> "
        "status=200 latency_ms=143",
    ),
    ("log", "<<timestamp>> WARN  auth failed for <<email>> from <<ip>>: invalid token <<secret>>"),
    ("log", "<<timestamp>> ERROR payment declined card=<<card>> order=<<order>> amount=<<price>> trace=<<request_id>>"),
    ("log", "<<timestamp>> DEBUG retrying upstream <<urlcred>> attempt=3 build=<<version>>"),
    (
        "log",
        "<<timestamp>> INFO deploy finished version=<<version>> commit=<<git_hash>> image_digest=sha256:<<sha256>> "
        "duration_ms=48213",
    ),
    ("log", "<<timestamp>> INFO snmp poll ok oid=<<oid>> host=<<ip>> sysUpTime=<<timestamp>>"),
    (
        "multilingual",
        "Kunde: Hallo, meine neue Telefonnummer ist <<phone>> und meine IBAN lautet <<iban>>. "
        "Bestellnummer <<order>>, Betrag <<price>>.\nAssistent: Danke, ich habe beides aktualisiert.",
    ),
    (
        "multilingual",
        "Client : Bonjour, vous pouvez me joindre au <<phone>> ou par mail à <<email>>. "
        "Ma commande <<order>> n'est toujours pas arrivée (suivi <<tracking>>).",
    ),
    ("multilingual", "Cliente: Hola, mi <<nid>> y mi correo es <<email>>. El pedido <<order>> costó <<price>>."),
    ("multilingual", "ユーザー: 注文番号 <<order>> の件です。電話番号は <<phone>>、メールは <<email>> です。🙏"),
    ("multilingual", "用户：我的订单 <<order>> 还没到，快递单号 <<tracking>>。请发邮件到 <<email>> 😊"),
    ("multilingual", "Cliente: Olá! Meu <<nid>>, cartão <<card>>. Pedido <<order>> de <<price>>. Obrigado 👍"),
    (
        "lookalikes_only",
        "Release notes <<version>>: fixed crash in parser (commit <<git_hash>>). Artifacts: "
        "sha256 <<sha256>>. Request ids in logs now use UUIDs such as <<uuid>>. Order <<order>> from <<timestamp>> "
        "was used as the regression case; price shown <<price>>; part <<product_code>>.",
    ),
    (
        "lookalikes_only",
        '{"shipment": {"tracking": "<<tracking>>", "ref": "<<luhn_invalid>>", "weight_kg": 2.4, '
        '"eta": "<<timestamp>>", "hs": "<<product_code>>"}, "bank_bic": "<<bic>>"}',
    ),
    (
        "lookalikes_only",
        'lockfile: "integrity": "<<integrity>>"\nremote: <<ssh_remote>>\nHEAD <<git_hash>>\n'
        "OID <<oid>> build <<version>> ts <<timestamp>> trace <<request_id>>",
    ),
    (
        "support_chat",
        "User: my email is <<email>>, please use <<again>> for everything, not the old address.\n"
        "Assistant: Done, <<again>> is now the only contact on the account.",
    ),
    (
        "tool_result",
        '{"users": [{"email": "<<email>>", "last_ip": "<<ip>>"}, {"email": "<<email>>", "last_ip": "<<ip>>"}, '
        '{"email": "<<email>>", "last_ip": "<<ip>>"}], "page": 1, "next_cursor": "<<uuid>>"}',
    ),
    (
        "log",
        '<<ip>> - - [<<timestamp>>] "GET /api/v1/customers?email=<<email>>&phone=<<phone>> HTTP/1.1" 200 512 '
        '"-" "python-requests/<<version>>"',
    ),
    (
        "code",
        "# .env.production\nSTRIPE_SECRET_KEY=<<secret>>\nSLACK_BOT_TOKEN=<<secret>>\nSENTRY_DSN_RELEASE=<<version>>\n"
        "BUILD_SHA=<<git_hash>>\nFEATURE_FLAGS_ETAG=<<sha256>>",
    ),
    (
        "lookalikes_only",
        "diff --git a/pkg/api.py b/pkg/api.py\nindex <<git_hash>>..<<git_hash>> 100644\n"
        '-__version__ = "<<version>>"\n+__version__ = "<<version>>"\n# released <<timestamp>>, ticket <<order>>, build <<uuid>>',
    ),
    (
        "rag_context",
        "[doc 2: billing-faq.md]\nCard payments show as <<order>> on statements. Refunds to <<iban>> "
        "need the account holder's consent; the reference <<luhn_invalid>> is not a card number.",
    ),
]
