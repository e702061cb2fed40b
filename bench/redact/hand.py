# ruff: noqa: E501  (long literal texts and keys read better unbroken)
"""Texts written by hand, in the set's markup: ⟦kind|value⟧ must be masked, ⟦?kind|value⟧ may be (reserved
placeholders), ⟦-category|value⟧ is a look-alike that must not be. Values are fake; generate.py checks each one.
"""

HAND_TEXTS: list[str] = [
    "User: hey can you debug this? my script says 401\n```\ncurl https://api.openai.com/v1/models -H "
    '"Authorization: Bearer ⟦secret|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⟧"\n```',
    "Here's my .env, the deploy fails:\nANTHROPIC_API_KEY=⟦secret|sk-ant-api03-q7W2xN9vL4mK8pR3tY6uB1cZ5hJ0dF2gS7aQ4wE9rT3yU6iO8pL1kJ5hG2fD7sA0zX4cV9bN3mQ6wE1rT8yU2iO5pA⟧\n"
    "APP_ENV=staging\nRELEASE=⟦-version|2.31.0⟧",
    "Slack alert hook: https://hooks.slack.com/services/T04ABCD12/B05EFGH34/⟦secret|q8Wm3Zt7Lp2Xv9Kc4Rn6Yb1J⟧ "
    "(posted from build ⟦-git_hash|9fceb02d0ae598e95dc970b74767f19372d61af8⟧)",
    'Customer wrote: "Please update my email from ⟦email|maria.rossi@libero.it⟧ to ⟦email|M.Rossi+shop@proton.me⟧, '
    'thanks!" — order ⟦-order|ORD-2024-771204⟧',
    'Tool result: {"account": {"holder": "J. Smith", "iban": "⟦iban|GB82WEST12345698765432⟧", '
    '"balance": "⟦-price|£1,204.55⟧"}}',
    "Bitte überweisen Sie auf ⟦iban|DE89 3704 0044 0532 0130 00⟧ (⟦-bic|COBADEFFXXX⟧). Rechnung ⟦-order|RE-2024-0193⟧, "
    "fällig am ⟦-timestamp|2024-05-31⟧.",
    "Veuillez rembourser sur le compte ⟦iban|FR14 2004 1010 0505 0001 3M02 606⟧. Merci !",
    "the card in the test fixture is ⟦card|4111 1111 1111 1111⟧ but the one that fails is "
    "⟦-luhn_invalid|4111 1111 1111 1112⟧",
    "Amex on file: ⟦card|3782 822463 10005⟧, exp 09/28. Order ⟦-order|#100238471⟧.",
    "kubectl logs api-7d9f8 | tail\n⟦-timestamp|2024-03-14T09:12:55.123Z⟧ INFO conn from ⟦ip|10.42.7.19⟧ "
    "forwarded-for ⟦ip|81.144.207.3⟧ req=⟦-uuid|3f2b8c1e-9a4d-4c7b-8e21-5d6f0a9b3c47⟧",
    "IPv6 client ⟦ip|2a02:8108:1c0:5e00::1f3⟧ hit the rate limit; docs example is ⟦?ip|2001:db8::42⟧.",
    "In the README: set `SMTP_FROM=⟦?email|noreply@example.com⟧` and point the webhook at ⟦?ip|192.0.2.10⟧.",
    '```python\nDATABASE_URL = "postgresql://⟦url_credentials|orders_rw:Zq8vN2xLp4Tm@⟧db.prod.internal:5432/orders"\n'
    'REDIS_URL = "redis://redis:6379/0"\n```',
    "Pushing with https://⟦url_credentials|ci-bot:Wm7kQ2xZ9pLr4Tn8@⟧git.acme.io/platform/api.git failed: 403",
    "github token in CI logs: ⟦secret|ghp_R7mK2xQ9vL4pT8nB3cZ6wY1jH5dF0gS2aE4u⟧ — rotate it please. Job ⟦-uuid|"
    "e4c1f9a2-7b3d-4e8f-a1c2-6d9b0f3e5a71⟧",
    "AWS creds pasted by user:\naws_access_key_id=⟦secret|AKIA4QXZ7WJ2LMN5PQRT⟧\naws_secret_access_key=⟦secret|"
    "wJalrXUtnF9EMI/K7MDENGbPxRfiCYzX3k8Lm2Qp⟧",
    "The AWS docs use ⟦?secret|AKIAIOSFODNN7EXAMPLE⟧ as their sample key id.",
    "stripe error: No such customer. Key used: ⟦secret|sk_live_51Hx9KqL2mN8pR4tV7wY3zB6c⟧ (request ⟦-request_id|"
    "req_8f2a9c4e1b7d3f60a5e2c8b9d1f4a7e3⟧)",
    "maps call failed: https://maps.googleapis.com/maps/api/geocode/json?address=Berlin&key=⟦secret|"
    "AIzaSyB3kX9mQ2pL7vT4nR8wZ1cY6jH0dF5gS2a⟧",
    "-----BEGIN OPENSSH PRIVATE KEY-----\n⟦secret|b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "QyNTUxOQAAACDk3W8vT7c2xQ9mL4pR1nZ6yB8jH0dF5gS2aE4uK7wXcAAAAJgZ3k9mGd5P⟧\n-----END OPENSSH PRIVATE KEY-----",
    "JWT from the browser: ⟦secret|eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkphbmUiLCJpYXQiOjE3MTA0MDc1NzV9"
    ".kX9mQ2pL7vT4nR8wZ1cY6jH0dF5gS2aE4uK7wXc3b0M⟧",
    "HF_TOKEN=⟦secret|hf_QkXmPzLrTvBnWcYdJhFgSaEuKoIpMnBvCxZa⟧ python train.py --revision ⟦-git_hash|a1b2c3d⟧",
    "Please call me back on ⟦phone|+44 20 7946 0321⟧ or my mobile ⟦phone|07700 900461⟧ after 5pm.",
    "Rückruf bitte unter ⟦phone|0151 23456789⟧ oder im Büro ⟦phone|+49 30 90182734⟧.",
    "Mon numéro : ⟦phone|06 12 34 56 78⟧. Colis n° ⟦-tracking|6A12345678901⟧.",
    "US office: ⟦phone|(415) 867-2231⟧; product code ⟦-product_code|415-867-2231-X⟧ is the bracket kit.",
    "電話は ⟦phone|090-3456-7812⟧ です。注文番号 ⟦-order|A7731042-03⟧。",
    "My SSN is ⟦national_id|219-09-9999⟧ and my DOB is 1985-07-12",
    "NI number ⟦national_id|AB 12 34 56 C⟧ for the payroll form, employee ref ⟦-order|EMP-00412⟧",
    "Mi DNI es ⟦national_id|12345678Z⟧, ¿necesitan algo más? Pedido ⟦-order|SO20240511⟧.",
    "Meu CPF: ⟦national_id|529.982.247-25⟧ 😊 Pedido ⟦-order|#887120344⟧",
    "Mijn BSN is ⟦national_id|111222333⟧, het factuurnummer is ⟦-order|2024-0098812⟧.",
    "Paste from logs (Windows build ⟦-version|10.0.19045.3803⟧, .NET ⟦-version|4.0.30319.42000⟧): "
    "SNMP ⟦-oid|1.3.6.1.4.1.311.1.1⟧ timeout after ⟦-timestamp|1710407575123⟧",
    "requirements.txt\nrequests==⟦-version|2.31.0⟧ \\\n    --hash=sha256:⟦-sha256|"
    "58cd2187c01e70e6e26505bca751777aa9f2ee0b7f4300988b709f44e013003f⟧",
    "npm ci warning: integrity ⟦-integrity|sha512-v2kDEe57lecTulaDIuNTPy3Ry4gLGJ6Z1O3vE1krgXZNrsQ+LFTGHVxVjcXPs"
    "17LhbZVGedAJv8XZ1tvj5FvSg==⟧ did not match",
    "Clone it: ⟦-ssh_remote|git@github.com:acme/agent-tools.git⟧ then checkout ⟦-git_hash|4e5f6a7b8c9d⟧.",
    "Your order ⟦-order|ORD-2025-004417⟧ ships with ⟦-tracking|1Z999AA10123456784⟧; total ⟦-price|$1,299.00⟧ "
    "charged on ⟦-timestamp|2025-01-03T18:22:09Z⟧.",
    "Our bank: ⟦-bic|DEUTDEFF⟧ only; no account numbers are stored. Ref ⟦-luhn_invalid|5500 0000 0000 0001⟧.",
    "🚨 urgent!! 🚨 my email ⟦email|lukas.schmidt@web.de⟧ got hacked, the new one is ⟦email|lukas_s@gmx.net⟧",
    'assistant ➜ calling tool send_sms({"to": "⟦phone|+33 6 48 21 90 37⟧", "body": "Code 482913"})',
    "Rate limited: ⟦secret|xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx⟧ used by ⟦email|ops-bot@northwind.io⟧",
    "npm config: //registry.npmjs.org/:_authToken=⟦secret|npm_Wq8ZxLm2Kp4Rt7Vn9Bc3Yh6Jd1Fg5Sa0Eu2K⟧",
    "GitLab: ⟦secret|glpat-Xk9mQ2pL7vT4nR8wZ1cY⟧ expires ⟦-timestamp|2025-06-30⟧",
    "Sendgrid: ⟦secret|SG.aB3dE5fG7hJ9kL1mN3pQ5r.sT7vW9xY1zA3bC5dE7fG9hJ1kL3mN5pQ7rS9tU1vW3x⟧",
    "Contact the DPO at ⟦email|dpo@acme-retail.com⟧; never share ⟦?email|jane.doe@example.org⟧-style test accounts.",
    "uuid ⟦-uuid|123e4567-e89b-42d3-a456-426614174000⟧ and sha ⟦-git_hash|da39a3ee5e6b4b0d3255bfef95601890afd80709⟧"
    " are fine to keep; the password ⟦secret|Tr0ub4dor&3xQ!⟧ is not.",
    "From: Anna Kowalski <⟦email|Anna.Kowalski@Uni-Heidelberg.de⟧>\nTo: support\nSubject: Re: invoice ⟦-order|INV-2024-00871⟧",
    '<a href="mailto:⟦email|carlos.garcia@hotmail.es⟧">write to us</a> or <a href="tel:⟦phone|+34612345678⟧">call</a>',
    "X-Forwarded-For: ⟦ip|93.184.12.77⟧, ⟦ip|10.0.12.4⟧\nUser-Agent: Mozilla/5.0 Chrome/⟦-version|120.0.6099.109⟧ Safari/537.36",
    "upstream connect error to ⟦ip|172.16.40.21⟧:8443 after ⟦-timestamp|2024-04-02T11:07:43Z⟧ (pod ⟦-order|api-7d9f8b6c5d-x2k9p⟧)",
    "curl -H 'Authorization: Basic ⟦secret|c3ZjLXJlcG9ydGluZzpYOXFMbTJ2UHI3dEs=⟧' https://reports.acme.io/export",
    "Docs say: export OPENAI_API_KEY=⟦-placeholder_key|sk-...your-key-here...⟧ and never commit it; the ⟦-placeholder_key|YOUR_API_KEY⟧ string is a placeholder.",
    "The logo is inline: data:image/png;base64,⟦-integrity|iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==⟧",
    "Windows error ⟦-product_code|0x80070005⟧ (access denied) on ⟦-version|10.0.22631.3296⟧; see CVE-2024-3094 for the xz issue.",
    "Пользователь: мой телефон ⟦phone|+7 912 345-67-89⟧, почта ⟦email|ivan.petrov@yandex.ru⟧. Заказ ⟦-order|№ 4471-2290⟧.",
    "사용자: 연락처는 ⟦phone|+82 10-2345-6789⟧ 이고 이메일은 ⟦email|minji.kim@naver.com⟧ 입니다.",
    "المستخدم: رقمي ⟦phone|+971 50 123 4567⟧ والبريد ⟦email|omar.haddad@outlook.com⟧ — الطلب ⟦-order|ORD-2024-55120⟧",
    "उपयोगकर्ता: मेरा नंबर ⟦phone|+91 98765 43210⟧ है, ऑर्डर ⟦-order|#771203344⟧ अभी तक नहीं आया।",
    '{"messages": [{"role": "user", "content": "my card is ⟦card|5425-2334-3010-9903⟧ and it keeps failing"}], "model": "gpt-4o-mini", "temperature": 0.2}',
    '{"tool_call_id": "call_⟦-request_id|Qm9vb2tzX2lzX25vdF9hX2tleQ⟧", "output": "{\\"ok\\": true, \\"ip\\": \\"⟦ip|188.62.14.201⟧\\"}"}',
    "Container ⟦-sha256|3b7c1f0e9a2d4c6b8e5f7a9c1d3e5f7b9a2c4e6d8f0a1b3c5d7e9f1a3b5c7d9e⟧ exited 137 (OOMKilled) at ⟦-timestamp|1712045263⟧",
    "Coordinates 52.520008, 13.404954 and elevation 34 m; meeting at 14:30 on ⟦-timestamp|2024-06-03⟧, room 4.12.",
    "The test suite uses Stripe's test key ⟦secret|sk_test_51MzQ2pLkX9vT4nR8wZ1cY6jH0dF5gS2aE4uK7wXc3b0M⟧ — rotate even test keys if leaked.",
    "Twilio webhook failed for ⟦phone|+1 646 201 7734⟧; message ⟦-request_id|SM4f9a2c81b7e3d6f0a5c2e8b9d1f4a7e3⟧ queued.",
    "sha1 of the file: ⟦-git_hash|2fd4e1c67a2d28fced849ee1bb76e7391b93eb12⟧, md5 ⟦-git_hash|9e107d9d372bb6826bd81d3542a419d6⟧.",
    "My IBAN is ⟦iban|ch9300762011623852957⟧ (I typed it in lower case, sorry)",
    "Paid with ⟦card|6011 0009 9013 9424⟧; the receipt number is ⟦-luhn_invalid|6011 0009 9013 9425⟧.",
    "Kontoinhaber: M. Jensen, IBAN ⟦iban|AT61 1904 3002 3457 3201⟧, Verwendungszweck ⟦-order|Rechnung 2024/118⟧",
    'psql "host=⟦ip|10.20.30.40⟧ user=analytics password=⟦secret|pG7xQ2mLz9Vt4Kr8⟧ dbname=events"',
    "Vault said: token ⟦secret|hvs.CAESIJx8Lm2Qp7vT4nR8wZ1cY6jH0dF5gS2aE4uK7wXc3b0MGh4KHGh2cy5WeEJr⟧ has expired",
]
