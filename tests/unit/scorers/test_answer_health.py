"""``answer_health`` on the shapes issue #38 saw on realistic traces: each observation is one case here.

Broken runs that passed, healthy runs that failed, and the classes the scorer did not check at all
(loops, chat-template tokens, tool calls or scratchpads as the answer, filler, another script,
non-English refusals). Every case is a run built the way the collector builds it: the finish reasons
of the model calls, the tool calls with their span status.
"""

from __future__ import annotations

from typing import Any

import pytest

from spanscore.run import Run
from spanscore.scorers import build
from spanscore.scorers.code.answer_health import MAX_ANSWER_CHARS

BROKEN: list[tuple[str, str, str, dict[str, Any]]] = [
    # --- structural signals
    (
        "cut: length on the last call",
        "Explain IRAs.",
        "Contributions phase out between",
        {"finish": ["stop", "length"]},
    ),
    ("cut: max_tokens", "Write the parser.", "def parse(text):\n    for", {"finish": ["max_tokens"]}),
    ("cut: content filter", "Tell me a story.", "Once upon a time", {"finish": ["content_filter"]}),
    (
        "failed tool: status ERROR, answer invented",
        "What's my balance?",
        "Your balance is $12,847.33.",
        {"tools": [{"name": "get_balance", "error": "ConnectionRefusedError: [Errno 111] Connection refused"}]},
    ),
    (
        "failed tool: ReadTimeout result",
        "Flights to Rome?",
        "There is a 9:40 flight for 89 EUR.",
        {"tools": [{"name": "search", "result": "ReadTimeout: HTTPSConnectionPool read timed out"}]},
    ),
    # --- error text as the answer
    (
        "module-qualified exception",
        "Write a cover letter.",
        "openai.RateLimitError: Error code: 429 - {'error': {}}",
        {},
    ),
    ("OpenAI SDK error", "When does the train run?", "Error code: 429 - {'error': {'message': 'quota'}}", {}),
    ("HTML 502 page", "Summarise my inbox.", "<html><head><title>502 Bad Gateway</title></head></html>", {}),
    ("stock fallback", "Change my billing email.", "Sorry, something went wrong... Please try again later.", {}),
    ("framework stop", "Find three papers.", "Agent stopped due to iteration limit or time limit.", {}),
    ("google status enum", "Ideas for an offsite?", "429 RESOURCE_EXHAUSTED. {'error': {'code': 429}}", {}),
    # --- placeholders
    ("single brace", "Summary of my refund?", "Hi {customer_name}, your refund is in review.", {}),
    ("bracket placeholder", "Charged twice?", "Dear [Customer Name], the duplicate will be released.", {}),
    ("lowercase bracket", "When is my payment due?", "Your payment of [amount] is due on [date].", {}),
    ("angle placeholder", "Has it shipped?", "Yes, tracking number <TRACKING_NUMBER>.", {}),
    # --- not checked before
    ("loop", "How do I learn SQL?", "Practise with real data. " * 8, {}),
    ("tail loop", "A tagline?", "Plan less, " + "ship more, " * 20, {}),
    ("chat-template tokens", "Capital of Australia?", "Canberra.<|im_end|>\n<|im_start|>user\nAnd Sydney?", {}),
    ("llama tokens", "Sick leave?", "Ten days.<|eot_id|><|start_header_id|>assistant<|end_header_id|>", {}),
    ("tool call JSON", "Weather in Dublin?", '{"name": "get_weather", "arguments": {"city": "Dublin"}}', {}),
    ("ReAct scratchpad", "Account owner?", "Thought: I need the CRM.\nAction: crm_search\nAction Input: {}", {}),
    ("filler only", "Status of my refund?", "Let me check that for you.", {}),
    ("filler, two sentences", "Hotels near RAI?", "Sure! I'll search for hotels. One moment please...", {}),
    (
        "Latin question, CJK answer",
        "How do I reset my password?",
        "您可以在登录页面点击忘记密码，然后输入您的注册邮箱。",
        {},
    ),
    ("refusal, Spanish", "¿Horario del sábado?", "Lo siento, pero no puedo ayudarte con esa solicitud.", {}),
    (
        "refusal, French",
        "Frais de virement ?",
        "Je suis désolé, mais je ne peux pas vous aider avec cette demande.",
        {},
    ),
    ("refusal, German", "Elternzeit?", "Es tut mir leid, aber dabei kann ich Ihnen nicht helfen.", {}),
    ("refusal, Portuguese", "Prazo de devolução?", "Desculpe, mas não posso ajudar com essa solicitação.", {}),
    ("refusal, Chinese", "我的订单什么时候发货？", "抱歉，我无法帮助您处理这个请求。", {}),
    ("refusal, Japanese", "新幹線の料金は？", "申し訳ありませんが、そのご依頼にはお応えできません。", {}),
    (
        "refusal with courtesy only",
        "Open PRs?",
        "I'm unable to assist with this request. Feel free to ask anything else!",
        {},
    ),
    ("refusal, Korean", "카드 사용 내역?", "죄송하지만 해당 요청은 도와드릴 수 없습니다.", {}),
    ("refusal, Hindi", "डिलीवरी कब होगी?", "क्षमा करें, मैं इस अनुरोध में आपकी सहायता नहीं कर सकता।", {}),
    (
        "as-an-AI dodge with a hedge",
        "Which headline is better?",
        "As an AI language model, I don't have personal opinions. Both have their merits; it depends on your goals.",
        {},
    ),
    ("stringified object", "List my bookings.", "[object Object]", {}),
    (
        "provider error JSON",
        "Summarise the thread.",
        '{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}',
        {},
    ),
    (
        "Java stack trace",
        "Regions?",
        'Exception in thread "main" java.lang.NullPointerException\n\tat a.B.c(B.java:12)',
        {},
    ),
]

HEALTHY: list[tuple[str, str, str, dict[str, Any]]] = [
    (
        "partial refusal that answers",
        "What dose of ibuprofen should I take?",
        "I can't give you a personalised dose, but here is the standard guidance for adults: 200 to 400 mg every "
        "four to six hours with food, and no more than 1,200 mg a day without a doctor's advice.",
        {},
    ),
    (
        "emphasis, not refusal",
        "Back up first?",
        "I cannot stress this enough: yes, take a backup first. The migration drops the table.",
        {},
    ),
    (
        "asked about 503",
        "What does 503 Service Unavailable mean?",
        "503 Service Unavailable means the server is busy.",
        {},
    ),
    ("asked about 404", "What's a 404 Not Found?", "404 Not Found means there is no page at that address.", {}),
    (
        "pasted EADDRINUSE",
        "I get 'Error: listen EADDRINUSE :::3000'. Fix?",
        "Error: EADDRINUSE means another process holds port 3000; stop it with `kill <PID>`.",
        {},
    ),
    (
        "tool said not found, agent asks to check",
        "Where is order 7731902?",
        "I couldn't find order 7731902; could you double-check the number on your confirmation email?",
        {"tools": [{"name": "get_order", "result": '{"found": false, "error": "no order with id 7731902"}'}]},
    ),
    (
        "failed tool retried with success",
        "Vitamin D dose?",
        "The RDA is 600 IU per day for adults.",
        {"tools": [{"name": "search", "error": "429 Too Many Requests"}, {"name": "search", "result": "[...]"}]},
    ),
    ("earlier call cut, last call complete", "Explain IRAs.", "Both grow tax-free.", {"finish": ["length", "stop"]}),
    ("placeholder in code", "f-strings?", '```python\nprint(f"Hello, {name}!")\n```', {}),
    ("markdown links and task list", "Checklist?", "- [x] Sign\n- [ ] Upload ID in [Workday](https://w.example)", {}),
    (
        "requested template",
        "Write a welcome template with placeholders I can fill in.",
        "Hi [First Name], welcome to the [Team Name] team!",
        {},
    ),
    ("requested repetition", "Write 'I will test' three times.", "I will test.\nI will test.\nI will test.", {}),
    ("asked for translation", "Translate 'thank you' into Japanese.", "ありがとうございます。", {}),
    ("requested JSON", "Order 4511 as JSON?", '```json\n{"order_id": "4511", "status": "shipped"}\n```', {}),
    (
        "a tool definition, not a call",
        "How do I declare a weather tool for the OpenAI API?",
        '{"type": "function", "function": {"name": "get_weather", "description": "Current weather",'
        ' "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}',
        {},
    ),
    (
        "promise then answer",
        "Is LH 1172 on time?",
        "Let me check that for you... Yes, LH 1172 is on time, gate A26.",
        {},
    ),
    (
        "short confirmation",
        "Add Ana as reviewer on PR 4821.",
        "Done - Ana Lima is now a requested reviewer on PR #4821.",
        {},
    ),
    ("one word", "What is 2+2?", "4", {}),
    # --- answers that only look like a defect
    ("a search that found nothing", "Meeting on Friday?", "I can't find any meetings on your calendar for Friday.", {}),
    ("a word that is also a status", "What is a merge conflict?", "Conflict: two branches changed the same lines.", {}),
    ("an HTML page asked for", "An HTML page titled Hello?", "<html><head><title>Hello</title></head></html>", {}),
    ("status code in a report", "How did the deploy go?", "500 errors dropped to zero after the rollback.", {}),
    ("impersonal 'cannot' in Japanese", "この機能は使えますか？", "この機能は無料プランではご利用できません。", {}),
    (
        "summary of a pasted passage in another script",
        "Summarise this: 北京是中国的首都，也是政治和文化中心。这座城市有三千多年的历史。",
        "Beijing is the capital of China and its political and cultural centre, with over 3,000 years of history.",
        {},
    ),
    ("a hedged opinion", "Do you like the redesign?", "I can't say I love it, but it isn't terrible.", {}),
    ("'try again' as advice", "Reset my password.", "Your password was reset. Please try again with the new one.", {}),
    (
        "the exception the user asked about",
        "What does 'invalid literal for int() with base 10' mean?",
        "ValueError: invalid literal for int() with base 10 is raised when the text isn't a number.",
        {},
    ),
    ("format syntax outside backquotes", "How do I use str.format?", 'Write "Hi {name}".format(name=x).', {}),
    (
        "a draft the user will sign",
        "Draft an email to my landlord about the broken heater.",
        "Hi Sam,\n\nThe heater stopped working on Monday. Could you arrange a repair?\n\nThanks,\n[Your Name]",
        {},
    ),
]


def _run(question: str, answer: str, extra: dict[str, Any]) -> Run:
    return Run(question, answer, finish_reasons=extra.get("finish"), tool_calls=extra.get("tools"))


def _score(run: Run) -> tuple[float | None, str | None]:
    result = build("answer_health").run(run)
    return result.score, result.reason


@pytest.mark.parametrize(("why", "question", "answer", "extra"), BROKEN, ids=[case[0] for case in BROKEN])
def test_a_broken_run_fails(why: str, question: str, answer: str, extra: dict[str, Any]) -> None:
    score, reason = _score(_run(question, answer, extra))
    assert score == 0.0, reason


@pytest.mark.parametrize(("why", "question", "answer", "extra"), HEALTHY, ids=[case[0] for case in HEALTHY])
def test_a_healthy_run_passes(why: str, question: str, answer: str, extra: dict[str, Any]) -> None:
    score, reason = _score(_run(question, answer, extra))
    assert score == 1.0, reason


def test_the_reason_names_the_finish_reason_of_the_last_call() -> None:
    _, reason = _score(_run("Explain.", "It is", {"finish": ["tool_calls", "length"]}))
    assert reason is not None and "length" in reason


def test_a_long_answer_is_read_up_to_the_cap_and_the_reason_says_so() -> None:
    answer = "word " * (MAX_ANSWER_CHARS // 2)
    score, reason = _score(_run("Say a lot.", answer, {}))
    assert reason is not None and f"first {MAX_ANSWER_CHARS} of {len(answer)} characters" in reason
    assert score == 0.0  # "word word word ..." is a loop


@pytest.mark.parametrize("text", ["{" * 50_000, "[" * 50_000 + "x", "a" * 100_000 + "!", "Error: " + "(" * 50_000])
def test_adversarial_text_gets_a_verdict(text: str) -> None:
    score, reason = _score(_run(text, text, {}))
    assert score in (0.0, 1.0), reason
