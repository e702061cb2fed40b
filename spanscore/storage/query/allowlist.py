"""The functions an untrusted query may call: an allowlist, so a function the engine adds later is refused.

The query API promises read-only access to spanscore's own tables. A denylist breaks that promise
each time the engine grows a function that reads a file, a URL, a dictionary or a setting, so the
rule is the other way round: a query may call only the pure functions named here, grouped by what
they do. Left out on purpose: anything that sleeps, reads files, URLs, other tables or dictionaries,
reveals settings, the host, the server or the session, writes, or does work out of proportion to
its input in one call (edit distances, fuzzy matching, folds over arrays), which the engine's time
limit cannot stop inside a block.

Names are the engine's canonical names (``system.functions``); aliases and case-insensitive spellings
resolve to them before the check (see ``query_check.FunctionCatalog``).
"""

from __future__ import annotations


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


FAMILIES: dict[str, frozenset[str]] = {
    # The parser's own forms of operators (a + b is plus(a, b), x IN (...) is in(x, ...), ...).
    "operators": _names(
        "plus minus multiply divide intDiv intDivOrZero modulo moduloOrZero positiveModulo negate "
        "equals notEquals less greater lessOrEquals greaterOrEquals isNotDistinctFrom and or not xor "
        "in notIn nullIn notNullIn like notLike ilike notILike tuple array arrayElement arrayElementOrNull "
        "tupleElement isNull isNotNull isZeroOrNull caseWithExpression transform"
    ),
    "arithmetic": _names(
        "abs sign gcd lcm max2 min2 divideOrNull"
        " exp exp2 exp10 log log2 log10 log1p ln sqrt cbrt pow power sin cos tan asin acos atan atan2 "
        "sinh cosh tanh erf erfc lgamma tgamma pi e hypot degrees radians isNaN isFinite isInfinite"
    ),
    "rounding": _names("round roundBankers floor ceil trunc roundToExp2 roundDuration roundAge roundDown"),
    "conditionals": _names("if multiIf ifNull nullIf coalesce assumeNotNull toNullable greatest least"),
    "bits": _names("bitAnd bitOr bitXor bitNot bitShiftLeft bitShiftRight bitCount bitTest"),
    "type conversion": _names(
        "CAST _CAST accurateCast accurateCastOrNull accurateCastOrDefault toString toFixedString toTypeName "
        "toInt8 toInt16 toInt32 toInt64 toUInt8 toUInt16 toUInt32 toUInt64 toFloat32 toFloat64 toDecimal32 "
        "toDecimal64 toDecimal128 toInt64OrZero toInt64OrNull toUInt64OrZero toUInt64OrNull toFloat64OrZero "
        "toFloat64OrNull toInt32OrZero toInt32OrNull toUInt32OrZero toDate toDate32 toDateTime toDateTime64 "
        "toDateOrNull toDateTimeOrNull toDateTime64OrNull parseDateTimeBestEffort parseDateTimeBestEffortOrNull "
        "parseDateTime64BestEffort parseDateTime64BestEffortOrNull toUUID toUUIDOrNull toBool toIntervalSecond "
        "toIntervalMinute toIntervalHour toIntervalDay toIntervalWeek toIntervalMonth toIntervalYear "
        "toIntervalMillisecond toIntervalMicrosecond toIntervalNanosecond toIntervalQuarter reinterpretAsString"
    ),
    "strings": _names(
        "length empty notEmpty lengthUTF8 lower upper lowerUTF8 upperUTF8 concat concatWithSeparator substring "
        "substringUTF8 left right leftUTF8 rightUTF8 trimBoth trimLeft trimRight startsWith endsWith position "
        "positionCaseInsensitive positionUTF8 locate replaceOne replaceAll replaceRegexpOne replaceRegexpAll "
        "match extract extractAll splitByChar splitByString splitByRegexp splitByWhitespace arrayStringConcat "
        "reverse format leftPad rightPad repeat hasToken countSubstrings toValidUTF8 isValidUTF8 base64Encode "
        "base64Decode tryBase64Decode hex unhex multiSearchAny firstLine"
    ),
    "date and time": _names(
        "now now64 today yesterday toYear toQuarter toMonth toDayOfMonth toDayOfWeek toDayOfYear toHour toMinute "
        "toSecond toMillisecond toUnixTimestamp toStartOfYear toStartOfQuarter toStartOfMonth toStartOfWeek "
        "toMonday toStartOfDay toStartOfHour toStartOfMinute toStartOfSecond toStartOfFiveMinutes "
        "toStartOfTenMinutes toStartOfFifteenMinutes toStartOfInterval toYYYYMM toYYYYMMDD toISOWeek toWeek "
        "dateDiff dateTrunc addSeconds addMinutes addHours addDays addWeeks addMonths addYears addMilliseconds "
        "subtractSeconds subtractMinutes subtractHours subtractDays subtractWeeks subtractMonths subtractYears "
        "subtractMilliseconds formatDateTime fromUnixTimestamp fromUnixTimestamp64Milli fromUnixTimestamp64Nano "
        "fromUnixTimestamp64Micro toUnixTimestamp64Milli toUnixTimestamp64Nano toUnixTimestamp64Micro timeSlot "
        "toTimezone toRelativeHourNum toRelativeDayNum toRelativeMinuteNum age"
    ),
    "arrays": _names(
        "range arrayMap arrayFilter arrayExists arrayAll arrayCount arraySum arrayAvg arrayMin arrayMax "
        "arrayFirst arrayLast arrayFirstIndex arrayCumSum arrayDifference arrayDistinct arrayUniq arrayEnumerate "
        "arrayConcat arraySlice arrayPushBack arrayPushFront arrayPopBack arrayPopFront arrayReverse arrayFlatten "
        "arrayCompact arrayZip arrayIntersect arrayJoin has hasAll hasAny indexOf "
        "countEqual emptyArrayString emptyArrayUInt64 emptyArrayFloat64"
    ),
    "maps and tuples": _names(
        "map mapKeys mapValues mapContains mapContainsKey mapFromArrays mapFilter mapApply tupleNames"
    ),
    "JSON extraction": _names(
        "JSONExtract JSONExtractString JSONExtractInt JSONExtractUInt JSONExtractFloat JSONExtractBool "
        "JSONExtractRaw JSONExtractKeys JSONExtractArrayRaw JSONHas JSONLength JSONType isValidJSON "
        "simpleJSONExtractString simpleJSONExtractFloat simpleJSONExtractInt simpleJSONHas toJSONString"
    ),
    "hashing": _names("cityHash64 sipHash64 xxHash64 murmurHash3_64 farmHash64 MD5 SHA256 halfMD5 CRC32"),
    "random values": _names("rand rand64 randCanonical randomPrintableASCII generateUUIDv4"),
    "window functions": _names(
        "row_number rank dense_rank denseRank percent_rank percentRank cume_dist ntile lagInFrame leadInFrame "
        "first_value last_value nth_value"
    ),
    "aggregate functions": _names(
        "count sum avg min max any anyLast anyHeavy argMin argMax uniq uniqExact uniqCombined uniqHLL12 "
        "groupArray groupUniqArray groupArraySample groupBitAnd groupBitOr groupBitXor quantile quantiles "
        "quantileExact quantilesExact quantileTDigest quantilesTDigest quantileTiming median stddevPop stddevSamp "
        "varPop varSamp covarPop covarSamp corr sumWithOverflow topK histogram avgWeighted "
        "simpleLinearRegression"
    ),
}
ALLOWED_FUNCTIONS: frozenset[str] = frozenset().union(*FAMILIES.values())

# Aggregate combinators (sumIf, uniqState, avgMerge, ...): each changes how an allowed aggregate
# is fed or what it returns, never what it can reach.
ALLOWED_COMBINATORS = (
    "SimpleState", "MergeState", "OrDefault", "Resample", "Distinct", "ForEach", "OrNull",
    "ArgMin", "ArgMax", "State", "Merge", "Array", "Map", "If",
)  # fmt: skip

# Table functions that only generate rows in memory.
ALLOWED_TABLE_FUNCTIONS = frozenset({"numbers", "numbers_mt", "zeros", "zeros_mt", "generate_series", "generateSeries"})
# System tables with nothing in them but a row or generated numbers.
ALLOWED_SYSTEM_TABLES = frozenset({"one", "numbers", "numbers_mt", "zeros", "zeros_mt"})
# Forms the parser writes that are not catalogue functions: ``x -> expr`` (its body is checked like any
# other part of the tree), ``EXISTS (subquery)``, ``GROUPING(...)`` and ``untuple(t)``.
PARSER_FORMS = frozenset({"lambda", "exists", "grouping", "untuple"})
