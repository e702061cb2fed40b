"""The words ``answer_health`` looks for, in English and the languages most agent traffic is in.

Refusals, stock fallbacks and "one moment" promises in English, Spanish, French, German, Portuguese,
Italian, Chinese, Japanese, Korean and Russian. No maintained library publishes such lists (refusal
detectors in evaluation suites are English keyword lists or classifiers), so these are written here,
as short sentence openings rather than whole sentences: a check matches an opening and then looks at
what follows it. Every pattern is RE2 (linear time in the text it reads) and case-insensitive.
"""

from __future__ import annotations

APOLOGY = (
    r"(?:(?:i'm|i am|we're|we are)\s+(?:so |very |really |truly )?sorry|sorry|unfortunately|regrettably|"
    r"i apologi[sz]e|my apologies|apologies|"
    r"lo siento|lamentablemente|disculp[ae]|perdón|lo lamento|"
    r"je suis désolée?|désolée?|malheureusement|je m'excuse|"
    r"es tut mir leid|tut mir leid|leider|entschuldigung|"
    r"desculpe|desculpa|lamento|infelizmente|sinto muito|"
    r"mi dispiace|purtroppo|spiacente|scusa|scusami|"
    r"извините|простите|к сожалению|мне жаль|"
    r"抱歉|对不起|很抱歉|非常抱歉|不好意思|申し訳(?:ありません|ございません)(?:が)?|すみません(?:が)?|残念ながら|"
    r"죄송하지만|죄송합니다|유감스럽게도|미안하지만|"
    r"क्षमा करें|माफ़ कीजिए|माफ़ करें|माफ करें|खेद है|عذرًا|عذرا|آسف|للأسف)"
)
"""An apology or regret that may open a refusal or a fallback."""

_EN_DECLINE = (
    r"(?:i|we)(?:'m|'re|\s+am|\s+are)?\s+(?:can't|cannot|can not|unable to|won't be able to|"
    r"will not be able to|not able to|won't|will not|must decline|have to decline|"
    r"(?:do not|don't) have (?:access|the ability|permission|the information)|not allowed|not permitted|"
    r"(?:don't|do not) (?:have|provide) (?:personal|real-time))"
)
_OTHER_DECLINE = (
    r"(?:pero |mais |aber |mas |ma |но |但是?|不过)?"
    r"(?:no puedo|no me es posible|no estoy en condiciones|no tengo acceso|no soy capaz|"
    r"je ne peux pas|je ne suis pas en mesure|je n'ai pas accès|il m'est impossible|"
    r"ich kann (?:[^.!?\n]{0,60}\s)?nicht|(?:dabei|damit|hierbei|das|hier) kann ich (?:[^.!?\n]{0,60}\s)?nicht|"
    r"ich habe keinen zugriff|kann ich (?:[^.!?\n]{0,60}\s)?nicht|"
    r"não posso|não consigo|não sou capaz|não tenho acesso|"
    r"non posso|non sono in grado|non ho accesso|non mi è possibile|"
    r"я не могу|не могу|я не в состоянии|у меня нет доступа|"
    r"我(?:无法|不能|没办法|不可以|做不到)|(?:无法|不能)(?:帮助|帮您|协助|回答|提供|处理)|"
    r"[^。！？\n]{0,40}(?:お手伝い|お答え|お応え|ご対応|ご協力|ご案内|ご回答)(?:すること)?(?:は)?(?:できません|いたしかねます)|"
    r"[^.!?\n]{0,40}(?:도와|도움을 |답변해 |답변을 |처리해 |안내해 )(?:드릴|줄) 수 없|"
    r"[^।.!?\n]{0,60}(?:सहायता|मदद)[^।.!?\n]{0,40}नहीं कर सक|لا أستطيع|لا يمكنني|لا أقدر)"
)
"""Declining in the first person ("no puedo", "ich kann ... nicht", "我无法"): a refusal with or without an apology."""
_DECLINE_AFTER_APOLOGY = (
    r"(?:[^。！？\n]{0,60}(?:できません|いたしかねます|致しかねます)|[^.!?\n]{0,60}(?:수 없습니다|수 없어요|수 없네요)|"
    r"[^।.!?\n]{0,80}(?:नहीं कर सकता|नहीं कर सकती|नहीं कर सकते|असमर्थ)|(?:我们)?(?:无法|不能|没办法))"
)
"""Impersonal "cannot" ("ご利用できません", "사용할 수 없습니다"): a fact, a refusal only after an apology."""
AS_AN_AI = (
    r"(?:as an? (?:large |general-purpose )?(?:ai|language model|llm|virtual assistant|chatbot)"
    r"(?: language model| assistant| model| system)?|"
    r"como (?:un |una )?(?:modelo de lenguaje|ia|inteligencia artificial|asistente de ia)|"
    r"en tant qu(?:e |')(?:ia|intelligence artificielle|modèle de langage|assistant)|"
    r"als (?:ki|künstliche intelligenz|sprachmodell|ki-sprachmodell)|"
    r"como (?:um )?(?:modelo de linguagem|ia|assistente de ia)|"
    r"come (?:un )?(?:modello linguistico|ia|intelligenza artificiale)|"
    r"как (?:языковая модель|ии|искусственный интеллект)|"
    r"作为一?个?(?:ai|人工智能|语言模型))"
)
_BUT = r"(?:(?:but|pero|mais|aber|mas|ma|но|但是?)\s*)?"
REFUSAL_OPENING = (
    rf"(?i)^\W{{0,3}}(?:(?:{APOLOGY}[\s,.!:;、，。-]*)?{_BUT}(?:{_EN_DECLINE}|{_OTHER_DECLINE}|{AS_AN_AI})"
    rf"|{APOLOGY}[\s,.!:;、，。-]*{_BUT}{_DECLINE_AFTER_APOLOGY})"
)
"""A sentence that opens by declining, in any of the languages above."""

IDIOM_AFTER_DECLINE = (
    r"(?i)^\W{0,3}(?:i|we)\s+(?:can't|cannot|can not)\s+(?:stress|emphasi[sz]e|overstate|overemphasi[sz]e|"
    r"understate|wait|thank|imagine|believe|agree|say|recommend [^.!?\n]{1,40} enough|help but|"
    r"find|locate|see any|spot)"
)
"""Emphasis that only looks like a refusal ("I cannot stress this enough", "I can't wait"), and a search that
found nothing ("I can't find any meeting on Friday"), which is an answer."""

COURTESY = (
    r"(?i)(?:feel free|let me know|anything else|other questions?|happy to help|glad to help|be happy to|"
    r"(?:i'd|i would|we'd|we would|i) (?:recommend|suggest|advise) (?:contacting|checking|reaching|consulting|"
    r"visiting|speaking|asking)|(?:it|the best choice|the answer|this) (?:really )?depends on|"
    r"(?:both|each) (?:have|has|of them have) (?:their|its) (?:own )?(?:merits|pros|strengths)|"
    r"contact (?:our |the )?(?:support|customer|help)|reach out|sorry for (?:the|any) inconvenience|"
    r"thank you for (?:your )?(?:understanding|patience)|how else can i|is there something else|"
    r"no dudes en|otra pregunta|n'hésitez pas|autre question|zögern sie nicht|weitere fragen|"
    r"fique à vontade|outra pergunta|non esitare|altre domande|другие вопросы|"
    r"其他问题|其他需要|他にご質問|다른 질문)"
)
"""A sentence of courtesy around a refusal or fallback: it is not an answer."""

_FALLBACK_BODY = (
    r"(?:something went wrong|went wrong while|"
    r"(?:i|we) (?:encountered|ran into|hit|experienced) an? (?:error|issue|problem|unexpected)|"
    r"i'm having trouble|i am having trouble|unable to (?:process|complete|handle|fulfil+) (?:your|the|this) request|"
    r"an? (?:unexpected |internal |unknown )?error (?:occurred|has occurred|was encountered|happened)|"
    r"agent stopped due to|stopped due to (?:max|iteration|time)|max(?:imum)? (?:iterations|turns|steps)|"
    r"iteration limit|recursion limit|unable to produce a final answer|could not parse (?:llm|model) output|"
    r"no final answer|"
    r"algo salió mal|se produjo un error|ocurrió un error|"
    r"une erreur (?:s'est produite|est survenue)|quelque chose s'est mal passé|"
    r"ein fehler ist aufgetreten|etwas ist schiefgelaufen|"
    r"ocorreu um erro|algo deu errado|"
    r"si è verificato un errore|qualcosa è andato storto|"
    r"произошла ошибка|что-то пошло не так|"
    r"出错了|发生错误|发生了错误|出现错误|"
    r"エラーが発生しました|問題が発生しました|"
    r"오류가 발생했습니다|문제가 발생했습니다)"
)
FALLBACK = (
    rf"(?i)^\W{{0,3}}(?:{APOLOGY}[\s,.!:;-]*)?(?:(?:but|oops|uh-oh|hmm)[\s,!.]*)?"
    rf"(?:it (?:seems|looks like|appears)(?: that)?\s+)?(?:the agent\s+)?{_FALLBACK_BODY}"
)
"""A sentence opening with a stock message a framework or an error handler sends instead of an answer."""
TRY_AGAIN = (
    r"(?i)^\W{0,3}(?:please\s+)?(?:try again|retry|inténtalo de nuevo|inténtelo (?:de nuevo|más tarde)|"
    r"réessayez|veuillez réessayer|versuchen sie es (?:später )?(?:erneut|noch einmal)|tente novamente|"
    r"riprova|попробуйте (?:позже|ещё раз|еще раз)|请稍后再试|稍后重试|しばらくしてから|잠시 후 다시)"
)
"""\"Please try again later.\": a stock failure message only when the answer says nothing else."""

PROMISE = (
    r"(?i)^\W{0,3}(?:(?:ok(?:ay)?|sure|certainly|of course|absolutely|alright|great question|great|got it|"
    r"no problem|understood|claro|bien sûr|d'accord|klar|natürlich|certo|claro que sim|конечно|好的|当然|"
    r"かしこまりました|承知しました|네|물론)[\s,.!¡]*)*"
    r"(?:let me (?:check|look|search|find|see|get|pull|fetch|verify|confirm|think|review|research|gather|dig|"
    r"take a look)|i'll (?:check|look|search|find|get|pull|fetch|verify|confirm|see|research|gather|"
    r"investigate|query|run|try|get back)|i will (?:check|look|search|find|get|pull|fetch|verify|confirm|see|"
    r"research|gather|investigate|query|run|try|get back)|i'm (?:going to|checking|looking|searching|fetching|"
    r"pulling|retrieving|gathering|working on)|i am (?:going to|checking|looking|searching|working on)|"
    r"one moment|just a (?:moment|sec|second|minute)|give me a (?:moment|sec|second|minute)|"
    r"please (?:wait|hold|stand by|bear with me)|hang on|hold on|bear with me|stand by|working on it|"
    r"(?:déjame|permíteme|voy a) (?:revisar|comprobar|buscar|consultar|verificar|ver)|un momento|"
    r"(?:laissez-moi|laisse-moi|je vais) (?:vérifier|regarder|chercher|consulter)|un instant|"
    r"(?:lass mich|ich schaue|ich sehe) (?:kurz )?(?:nach|prüfen|suchen)|einen moment|"
    r"(?:deixe-me|deixa eu|vou) (?:verificar|conferir|procurar|consultar)|um momento|só um instante|"
    r"(?:lasciami|fammi|vado a) (?:controllare|verificare|cercare)|"
    r"请稍等|稍等|让我(?:查|看|检查|确认)|我(?:来|去)?查一下|少々お待ち|確認します|確認いたします|お調べします|"
    r"잠시만|확인해 (?:보겠|드리겠))"
)
"""A sentence promising work still to be done ("Let me check that for you.", "One moment please.")."""

ACKNOWLEDGEMENT = (
    r"(?i)^\W{0,3}(?:ok(?:ay)?|sure|certainly|of course|absolutely|alright|great question|great|got it|"
    r"no problem|understood|claro|bien sûr|d'accord|klar|natürlich|certo|конечно|好的|当然)\W*$"
)
"""A bare acknowledgement sentence ("Sure!")."""
