"""The crisis lexicon floor: categories, rules as data, and the word lists the screen normaliser uses.

Every pattern runs over the text as ``bot.screen.screen_text`` leaves it: lowercase, Unicode and
leetspeak folded, contractions expanded ("I'm" is "i am", "don't" is "do not"), no apostrophes,
one space between words, and `` | `` where a clause ended (``.``, ``,``, ``!``, ``?``, ``;``, ``:``).
Word gaps (``<G3>``) never cross a ``|``. Content files can add rules, never remove these.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.models import Level, Track

# Categories: what a detection is about. Operators see these in the escalation log.
SUICIDAL = "suicidal"
"""Explicit suicidal thoughts or intent, including slang ("kms", "unalive", "sewerslide")."""
PASSIVE = "passive"
"""A wish to be dead or not to wake up."""
METHOD = "method"
"""Method, means, plan or timing."""
ATTEMPT = "attempt"
"""An attempt in progress or just made."""
SELF_HARM = "self_harm"
"""Self-harm without stated suicidal intent."""
FAREWELL = "farewell"
"""Goodbyes and final arrangements."""
HOPELESSNESS = "hopelessness"
"""Hopelessness, feeling trapped, being a burden."""
PARTNER_DANGER = "partner_danger"
"""Danger from a partner, ex or someone at home: threats, violence, strangulation, stalking."""
PARTNER_SUICIDE_THREAT = "partner_suicide_threat"
"""A partner threatening suicide to keep the person from leaving."""
THIRD_PARTY = "third_party"
"""Someone else is at risk: the person is worried about a friend or relative."""
HARM_OTHERS = "harm_others"
"""The person says they may hurt someone else."""

CATEGORIES: tuple[str, ...] = (
    SUICIDAL,
    PASSIVE,
    METHOD,
    ATTEMPT,
    SELF_HARM,
    FAREWELL,
    HOPELESSNESS,
    PARTNER_DANGER,
    PARTNER_SUICIDE_THREAT,
    THIRD_PARTY,
    HARM_OTHERS,
)
"""Every category a rule may name, in the order rules are listed."""

TRACKS: dict[str, Track] = {
    **dict.fromkeys(CATEGORIES, Track.SELF),
    PARTNER_DANGER: Track.OTHERS,
    PARTNER_SUICIDE_THREAT: Track.OTHERS,
    HARM_OTHERS: Track.OTHERS,
}
"""Which reply track each category leads to."""


@dataclass(frozen=True)
class Rule:
    """One lexicon pattern and what it means when it fires."""

    id: str
    category: str
    level: Level
    pattern: re.Pattern[str]
    track: Track = Track.SELF
    window_level: Level | None = None
    """The level this rule reaches when the person is already in a crisis state (never lower than ``level``)."""
    language: str | None = None
    """The language the rule reads when it is not English ("es"): the crisis reply adds that language's line."""


_NOUN_PARTNER = (
    r"(?:ex |former |abusive |old )?(?:husband|hubby|wife|boyfriend|girlfriend|bf|gf|partner|spouse|fiance|fiancee"
    r"|abuser|narcissist|narc|man|dad|father|stepdad|stepfather|mom|mum|mother|stepmom|brother|son|roommate"
    r"|baby daddy|babydaddy|baby mama|ex)"
)
MACROS: dict[str, str] = {
    "G1": r"(?:[^ |]+ )?",
    "G2": r"(?:[^ |]+ ){0,2}",
    "G3": r"(?:[^ |]+ ){0,3}",
    "G4": r"(?:[^ |]+ ){0,4}",
    "G6": r"(?:[^ |]+ ){0,6}",
    "END": r"(?= \||$)",
    "HE": rf"(?:he|she|they|my {_NOUN_PARTNER}|the (?:abuser|narcissist|narc)|(?:ex )?(?:husband|boyfriend|partner))",
    "HIM": rf"(?:him|her|them|my {_NOUN_PARTNER})",
    "HIMSELF": r"(?:himself|herself|themselves|themself)",
    # Adverbs and auxiliaries allowed between a subject and its verb; "never" and "not" are not among them.
    "ADV": (
        r"(?:(?:just|also|always|again|even|literally|then|has|had|have|kept|keeps|keep|finally|actually"
        r"|physically|really|once|twice|sometimes|often|still|almost|nearly|basically|would|will|is|was|has been"
        r"|started|starts|tried to|tries to|trying to|has started|just now|last night|today|started to) ){0,3}"
    ),
    "DRUG": (
        r"(?:pills?|meds|medications?|medicines?|tablets?|capsules?|sleeping pills|painkillers|pain killers"
        r"|tylenol|advil|ibuprofen|acetaminophen|paracetamol|excedrin|aspirin|benadryl|xanax|oxy|oxycodone"
        r"|oxycontin|fentanyl|heroin|insulin|antidepressants?|sertraline|zoloft|prozac|lithium|seroquel|ambien"
        r"|melatonin|nyquil|antifreeze|bleach|opioids?|percocet|vicodin|valium|klonopin|lorazepam|diazepam"
        r"|morphine|codeine|tramadol|sleeping tablets|drugs)"
    ),
    "QTY": (
        r"(?:all(?: of)?(?: my| the| his| her| their| those| these| them)?|every|the whole|a whole|the entire"
        r"|an entire|a bunch of|a handful of|a lot of|lots of|tons of|so many|too many|loads of|dozens of|a dozen"
        r"|(?:like |about |around |over )?(?:[5-9]|[1-9][0-9]+|five|six|seven|eight|nine|ten|eleven|twelve"
        r"|fifteen|twenty|thirty|forty|fifty|hundred|a hundred))"
    ),
    "SOON": (
        r"(?:tonight|today|right now|now|this weekend|tomorrow|this morning|this evening|soon|in an hour"
        r"|in a few hours|(?:after|when|once) (?:everyone|everybody|they|the kids|he|she) (?:is |are )?"
        r"(?:asleep|sleeping|in bed|goes to sleep|go to sleep|falls asleep|fall asleep|gone|leaves|leave))"
    ),
    "RECENT": (
        r"(?:just|already|earlier|today|tonight|last night|yesterday|an hour ago|a few hours ago|this morning"
        r"|right now|minutes ago|hours ago|this evening|just now)"
    ),
    "KIN": (
        r"(?:friend|best friend|bestie|sister|brother|sis|bro|mom|mum|mother|dad|father|daughter|son|kid|child"
        r"|cousin|roommate|coworker|colleague|aunt|uncle|niece|nephew|grandma|grandpa|teen|student|classmate"
        r"|neighbor|neighbour|girlfriend|boyfriend|wife|husband|partner)"
    ),
    "HAIR": (
        r"(?! (?:my|her|his|your|their|the) (?:hair|clothes|shirt|jeans|beard|eyebrows|roots)"
        r"|(?:it|them) (?:red|blue|black|pink|green|purple|blonde|brown))"
    ),
}
"""Shorthands usable in floor patterns as ``<NAME>``; moderators write plain regular expressions."""

_MACRO = re.compile(r"<([A-Z_0-9]+)>")


def expand(template: str) -> str:
    """Replace every ``<NAME>`` shorthand in a pattern with its regular expression."""
    return _MACRO.sub(lambda found: MACROS[found.group(1)], template)


def _r(
    rule_id: str,
    category: str,
    level: Level,
    alternatives: tuple[str, ...],
    *,
    track: Track | None = None,
    window: Level | None = None,
    language: str | None = None,
) -> Rule:
    pattern = re.compile("|".join(f"(?:{expand(alternative)})" for alternative in alternatives))
    return Rule(rule_id, category, level, pattern, track or TRACKS[category], window, language)


C, X, IM = Level.CONCERN, Level.CRISIS, Level.IMMINENT

FLOOR: tuple[Rule, ...] = (
    # --- an attempt in progress or just made (C-SSRS 6) ---
    _r(
        "attempt.took_quantity",
        ATTEMPT,
        IM,
        (
            r"\b(?:took|taken|swallowed|downed|popped|ate|chugged|have taken|just took) <G1><QTY> <G2><DRUG>\b",
            r"\b(?:took|taken|swallowed|downed|popped) (?:them all|it all|all of them|all of it|the lot)\b",
            r"\b(?:took|taken|swallowed|downed|popped) (?:the|a|an) (?:whole|entire|full) (?:bottle|pack|packet|box"
            r"|blister|strip|container|prescription)\b",
        ),
    ),
    _r(
        "attempt.overdosed",
        ATTEMPT,
        IM,
        (
            r"\bi (?:<G2>)?(?:overdosed|od)\b(?! on (?!<G2><DRUG>))(?! (?:later|tonight|tomorrow|if|when))",
            r"\b(?:took|had|did) (?:an|a) (?:overdose|od)\b",
        ),
    ),
    _r(
        "attempt.poison",
        ATTEMPT,
        IM,
        (r"\b(?:took|swallowed|drank|drinking|drunk) <G2>(?:bleach|antifreeze|poison|rat poison|drain cleaner)\b",),
    ),
    _r(
        "attempt.bleeding",
        ATTEMPT,
        IM,
        (
            r"\bcut (?:too|really|so|way) deep\b",
            r"\b(?:can not|will not|does not|is not) stop (?:the )?bleeding\b",
            r"\bbleeding (?:a lot|badly|heavily|so much|everywhere|out|really bad|so bad)\b",
            r"\blost (?:a lot|so much|too much) (?:of )?blood\b",
            r"\b(?:blood|bleeding) (?:will not|is not) stop",
        ),
    ),
    _r(
        "attempt.tried_recently",
        ATTEMPT,
        IM,
        (
            r"\b(?:tried|attempted|trying) to (?:kill|hang|end|off|unalive|overdose|drown|shoot|poison) (?:myself|my"
            r" life"
            r"|it all) <G2><RECENT>\b",
            r"\b<RECENT> (?:tried|attempted) to (?:kill|hang|end|off|unalive|overdose|drown|shoot|poison) (?:myself"
            r"|my life|it all)\b",
        ),
    ),
    _r(
        "attempt.tried",
        ATTEMPT,
        X,
        (
            r"\b(?:tried|attempted|trying) to (?:kill|hang|end|off|unalive|overdose|drown|shoot|poison) (?:myself|my"
            r" life"
            r"|it all)\b",
            r"\bi (?:tried|attempted) suicide\b",
            r"\bsuicide attempt\b",
        ),
    ),
    _r(
        "attempt.on_the_edge",
        ATTEMPT,
        IM,
        (
            r"\b(?:standing|sitting|i am|climbing|climbed) (?:on|onto|at|over) (?:the|a|this) (?:edge of the"
            r" )?(?:bridge"
            r"|ledge|roof|rooftop|railing|tracks|cliff|balcony)\b(?! (?:club|game|party))",
        ),
    ),
    _r("attempt.noose_on", ATTEMPT, IM, (r"\b(?:noose|rope|belt) (?:is )?(?:around|on) my neck\b",)),
    _r(
        "attempt.kicking_in",
        ATTEMPT,
        IM,
        (r"\b(?:pills|meds|tablets) (?:are )?(?:starting to )?(?:kick|kicking) in\b",),
    ),
    # --- method, means, plan or timing (C-SSRS 3-5) ---
    _r(
        "method.means_at_hand",
        METHOD,
        IM,
        (
            r"\b(?:<DRUG>|gun|knife|razor|blade|rope|noose) (?:is |are )?(?:all )?(?:right here|in front of me|next to"
            r" me"
            r"|beside me|in my hands?|on my lap|lined up|counted out|laid out|right next to me|right in front of me"
            r"|right beside me)\b",
            r"\b(?:lined up|counted out|laid out|counting out|counted) (?:all )?(?:the |my |his |her )?<DRUG>",
            r"\b(?:have|got|have got) (?:the |my |a |his )?(?:gun|knife|razor|blade|rope|noose) (?:ready|loaded|out"
            r"|here"
            r"|with me)\b",
        ),
    ),
    _r(
        "method.stockpile",
        METHOD,
        IM,
        (
            r"\b(?:saving|saved|stockpiling|stockpiled|hoarding|hoarded|stashing|stashed|saving up|storing up|been"
            r" saving)"
            r" (?:up )?(?:all )?(?:of )?(?:my |his |her |the |some )?<DRUG>\b",
        ),
    ),
    _r(
        "method.rope",
        METHOD,
        IM,
        (r"\b(?:bought|got|buying|tied|made|making|tying|have) (?:a |some |the |my )?(?:rope|noose)\b(?! swing)",),
    ),
    _r("method.noose", METHOD, X, (r"\bnoose\b",)),
    _r(
        "method.timing",
        METHOD,
        IM,
        (
            r"(?:^|\| )(?:tonight is the night|today is the day|tonight is it|this is the night)<END>",
            r"\b(?:do|end) it <SOON> <G1>(?:after|when|while|before|once) (?:everyone|everybody|they|the kids|he"
            r"|she)\b",
            r"\b(?:do|end) it (?:after|when|once) (?:everyone|everybody|they|the kids) (?:is |are )?(?:asleep|sleeping"
            r"|in bed|gone)\b",
            r"\b(?:kill|end|off|hang|unalive) (?:myself|it all|my life) <SOON>\b",
        ),
    ),
    _r(
        "method.do_it_soon",
        METHOD,
        C,
        (
            r"\b(?:going to|will|about to|ready to|plan to|planning to|want to) do it (?:tonight|today|right now|now"
            r"|this weekend|soon)\b",
        ),
        window=IM,
    ),
    _r(
        "method.have_plan",
        METHOD,
        C,
        (
            r"\bi (?:have|made|have made|have got) (?:a plan|it all planned(?: out)?|everything planned(?: out)?"
            r"|it all worked out|it planned(?: out)?)<END>",
        ),
        window=IM,
    ),
    _r(
        "method.how_many",
        METHOD,
        X,
        (
            r"\bhow (?:many|much) <G3><DRUG> <G3>(?:would|will|does|do|to|it|should|is|till|until|before) <G3>(?:take"
            r"|kill|be enough|be lethal|be fatal|die|od|overdose|stop my heart|wake up|stop breathing)\b",
            r"\b(?:lethal|fatal|deadly) (?:dose|amount|overdose|dosage)\b",
            r"\bhow (?:to|do i|do you|can i|would i) (?:overdose|od)\b",
            r"\boverdose on <G2><DRUG>\b",
        ),
    ),
    _r(
        "method.dosage",
        METHOD,
        X,
        (
            r"\b[0-9]+ ?mg (?:x ?[0-9]+|times [0-9]+|of [0-9]+)\b",
            r"\b<DRUG> <G4>(?:should|would|will|is|be) (?:it |that )?(?:be )?enough\b",
        ),
    ),
    _r(
        "method.intent_overdose",
        METHOD,
        X,
        (
            r"\b(?:going to|want to|about to|will|planning to|plan to|ready to|thinking of|thinking about|gonna)"
            r" (?:overdose|od|take all (?:of )?my|swallow all|take every|take the whole)\b(?! on (?!<G2><DRUG>))",
        ),
    ),
    _r(
        "method.bridge",
        METHOD,
        X,
        (
            r"\b(?:which|what|where)\b <G3>(?:bridges?|buildings?|roofs?|cliffs?|parking garages?|overpass)"
            r" <G4>(?:highest"
            r"|tallest|high enough|taller than|higher than|over [0-9]+ (?:meters|metres|feet|ft|m|stories|floors))\b",
            r"\b(?:highest|tallest) (?:bridge|building|cliff|parking garage)s? (?:near me|near here|around here|in my"
            r" (?:city|town|area)|close by|nearby)\b",
            r"\bhow (?:high|far|tall) <G4>(?:fall|jump|drop|bridge|building) <G4>(?:die|kill|survive|be fatal|be"
            r" enough)\b",
        ),
    ),
    _r(
        "method.jump",
        METHOD,
        X,
        (
            r"\b(?:jump|jumping|throw myself|yeet myself|throwing myself) (?:off|from|in front of) (?:a|the|this|that"
            r"|my)"
            r" (?:bridge|building|roof|rooftop|cliff|balcony|train|overpass|parking garage|ledge|window)\b",
            r"\b(?:step|stepping|walk|walking|jump|throw myself|yeet myself) (?:in front of|into) (?:a |the )?(?:train"
            r"|bus|truck|car|traffic|oncoming traffic)\b",
            r"\b(?:drive|driving|crash|crashing|steer|swerve) (?:my car )?(?:into|off) (?:a |the )?(?:tree|wall|bridge"
            r"|cliff|oncoming|traffic|river)\b(?! (?:on the way|today at work))",
        ),
    ),
    _r("method.wrists", METHOD, X, (r"\b(?:slit|slice|slash|open|cut) (?:my |both )?(?:wrists?|throat|veins?)\b",)),
    _r(
        "method.gun_self",
        METHOD,
        X,
        (
            r"\bgun (?:to|in|against) my (?:head|mouth|temple)\b",
            r"\b(?:blow|blowing) my (?:brains|head) (?:out|off)\b",
        ),
    ),
    _r(
        "method.plan",
        METHOD,
        X,
        (
            r"\b(?:wrote|written|writing|figured|figuring|worked|working|know|decided|planned|planning) (?:down |out )?"
            r"(?:exactly )?(?:how|when|where) (?:i would|i will|i am going to|i want to|i could|to|i will) (?:do it|end"
            r" it"
            r"|kill myself|die|end my life)\b",
            r"\b(?:have|made|making) (?:a |my )?(?:plan|plans) (?:to|for how to|for when i) (?:kill myself|end (?:it|my"
            r" life)|die|do it)\b",
        ),
    ),
    _r(
        "method.thinking_means",
        METHOD,
        X,
        (
            r"\b(?:gun|pills|rope|knife|razor|blade|bridge|meds|noose) <G6>(?:i )?(?:keep|keeps|can not stop)"
            r" (?:thinking"
            r" about|looking at|staring at|thinking of) (?:it|them|using|taking|how)\b",
        ),
    ),
    # --- danger from a partner, an ex or someone at home ---
    _r(
        "partner.threat_to_kill",
        PARTNER_DANGER,
        IM,
        (
            r"\b(?:threat\w*|said|says|saying|told me|tells me|telling me|swore|swears|promised|promises|vowed|texted"
            r"|texts|wrote|yelled|screamed|screaming|yelling) <G4>(?:kill|murder|shoot|stab|strangle|choke|end) me\b",
            r"\b<HE> <ADV>(?:is going to|will|is gonna|going to|gonna|tried to|tries to|is trying to|trying to|wants to"
            r"|threatens to|threatened to|is about to|has tried to) (?:really |actually |literally )?(?:kill|murder"
            r"|shoot"
            r"|stab|strangle) me\b",
            r"\b(?:scared|afraid|terrified|frightened|worried|think|thinks|know|sure|feel like|fear) (?:that )?<HE>"
            r" <G2>"
            r"(?:is going to|will|might|would|wants to|is gonna|is about to|could) (?:kill|murder|shoot|stab|strangle)"
            r" me\b",
            r"\bwants me dead\b",
            r"\b(?:hell|shell|theyll) (?:kill|murder|shoot|stab|strangle) me\b",
        ),
    ),
    _r(
        "partner.strangled",
        PARTNER_DANGER,
        IM,
        (
            r"\b(?:choked|choking|chokes|choke|strangled|strangling|strangles|strangle|throttled|throttling|suffocated"
            r"|suffocating|smothered) me\b(?! up\b(?! against))",
            r"\b(?:hands?|belt|rope|cord) (?:around|round) my (?:neck|throat)\b",
            r"\bhand over my (?:mouth|nose)\b",
            r"\b(?:squeezed|squeezing|grabbed|crushed) my (?:neck|throat)\b",
            r"\bgrabbed me by (?:the|my) (?:neck|throat)\b",
            r"\b(?:could not|can not) breathe (?:when|while|because|after) (?:he|she|they)\b",
        ),
    ),
    _r(
        "partner.weapon",
        PARTNER_DANGER,
        IM,
        (
            r"\b(?:pointed|pointing|aimed|aiming|held|holding|waved|waving|pulled|pulls) (?:a |the |his |her |their )?"
            r"(?:gun|knife|rifle|pistol|shotgun|blade|weapon) (?:at|to|on|against) (?:me|my)\b",
            r"\b(?:came|comes|coming|went) (?:at|after) me with (?:a |the |his |her )?(?:gun|knife|blade|bat|hammer"
            r"|weapon)\b",
            r"\b<HE> <ADV>(?:has|got|is holding|took out|pulled out|grabbed|is waving|has got) (?:a |the |his |her )?"
            r"(?:gun|knife|rifle|pistol|weapon) (?:out|again|right now|and|in (?:his|her|their) hand)\b",
            r"\bthreatened me with (?:a |the |his |her )?(?:gun|knife|weapon|blade)\b",
        ),
    ),
    _r(
        "partner.here_now",
        PARTNER_DANGER,
        IM,
        (
            r"\b(?:banging|pounding|kicking|hammering) (?:on|at|down|in) (?:the |my )?(?:door|window|doors|windows)\b",
            r"\b(?:trying to|tried to|is trying to) (?:break|get|force his way|force her way|force their way) (?:in"
            r"|into (?:my|the) (?:house|apartment|room|place))\b",
            r"\bbreaking (?:in|down (?:the|my) door)\b",
            r"\b<HE> (?:is|are|has been|keeps) (?:outside|at) (?:my|the) (?:door|window|house|home|apartment|place"
            r"|work|job|car)\b",
            r"\b<HE> (?:is|are) (?:here|outside|in the house|downstairs|on (?:his|her|their) way(?: here| over| home)?)"
            r" (?:right now|now)\b",
        ),
    ),
    _r(
        "partner.locked_in",
        PARTNER_DANGER,
        IM,
        (
            r"\b(?:locked|hiding|barricaded) (?:myself )?in (?:the|a|my) (?:bathroom|room|closet|car|bedroom|basement"
            r"|toilet)\b",
            r"\blocked me (?:in|out|inside)\b",
            r"\b<HE> <ADV>(?:will not|does not|is not|would not|never) let (?:me|us) (?:leave|go|out)\b",
        ),
    ),
    _r(
        "partner.danger_now",
        PARTNER_DANGER,
        IM,
        (
            r"\b(?:i am|we are|i feel|feel|i think i am|i might be) in (?:immediate |real |serious )?danger\b(?! of)",
            r"\b(?:scared|afraid|terrified|fear|fearing) for my (?:life|safety)\b",
            r"\b(?:help|please help) <G2>(?:he|she|they) (?:is|are) (?:hurting|attacking|beating|choking|coming|going"
            r" to)\b",
        ),
    ),
    _r(
        "partner.violence",
        PARTNER_DANGER,
        X,
        (
            r"\b<HE> <ADV>(?:hit|hits|hitting|punched|punches|punching|slapped|slaps|slapping|kicked|kicks|kicking|beat"
            r"|beats|beating|shoved|shoves|shoving|bit|bites|burned|burns|stabbed|stabs|raped|rapes|assaulted|assaults"
            r"|attacked|attacks|attacking|smacked|smacks|slammed|slams|headbutted|elbowed|dragged|drags|spat on) me\b"
            r"(?! (?:up|off|over|at|in (?:chess|cards|a game|an argument|every argument)|to it|emotionally|with (?:his"
            r"|her"
            r"|their) words))",
            r"\b<HE> <ADV>(?:threw|throws|pushed|pushes|pushing) me (?:against|into (?:a|the) (?:wall|door|table)"
            r"|across"
            r"|down|onto|to the (?:floor|ground)|off|out of)\b",
            r"\b<HE> <ADV>(?:beat|beats) me up\b",
            r"\b(?:beat|beats|beaten|hit|hits) me (?:with (?:a|his|her|their|the) |black and blue|until|till|so hard)",
            r"\b(?:raped|rapes|sexually assaulted|forced himself on|forced herself on)\b",
            r"\bforced me (?:to have sex|into sex|to do sexual)\b",
            r"\b<HE> <ADV>(?:physically|sexually) (?:hurt|hurts|abused|abuses|attacked|assaulted) me\b",
            r"\b<HE> <ADV>(?:pushed|shoved|pushes) me\b(?! (?:away|to|into|toward|towards|forward|out of my comfort"
            r"|too far|aside|further|harder))",
            r"\b<HE> <ADV>(?:grabbed|grabs|twisted|twists|squeezed|yanked) my (?:arm|arms|wrist|wrists|hair|face|jaw)"
            r"\b(?! (?:gently|softly|to (?:help|hold)))",
            r"\b<HE> <ADV>(?:hurt|hurts|hurting|abused|abuses) me physically\b",
            r"\b<HE> <ADV>(?:slammed|smashed|banged|hit|bashed) my head\b",
            r"\b<HE> <ADV>(?:broke|fractured|bruised|split) my (?:nose|rib|ribs|arm|jaw|lip|wrist|finger|eye|eye"
            r" socket)\b",
            r"\b<HE> <ADV>(?:gave|has given) me (?:a )?(?:black eye|bruises|concussion)\b",
            r"\b<HE> <ADV>(?:pulled|pulls|yanked|yanks) (?:me by )?my hair\b",
            r"\b<HE> <ADV>(?:hit|hits|hitting|beat|beats|beating|hurt|hurts|slapped|slaps|kicked|kicks) (?:the|my|our)"
            r" (?:kids|children|son|daughter|baby|kid)\b",
            r"\b(?:he|she|they) (?:nearly|almost) killed me\b",
            r"\bgrabbed me by (?:the|my) (?:hair|throat|neck|arm|arms|wrist)\b",
            r"\b(?:bruises|black eye|broken (?:rib|nose|arm)) (?:from|after|because of) (?:him|her|them|he|she)\b",
        ),
    ),
    _r(
        "partner.threatens",
        PARTNER_DANGER,
        X,
        (
            r"\b<HE> <ADV>(?:threatened|threatens|threatening|threaten) (?:me\b|to (?:hurt|kill|shoot|stab|burn) (?:me"
            r"|the"
            r"|my|our|us)|to take (?:the|my|our) (?:kids|children|baby)|to (?:post|share|leak|send|show) (?:my|our|the)"
            r" (?:pictures|photos|pics|nudes|videos|video|private))",
            r"\bthreatened to (?:hurt|kill) (?:the |my |our )?(?:kids|children|son|daughter|baby|dog|cat)\b",
            r"\b(?:he|she|they) (?:said|says|told me|tells me|keeps telling me|keeps saying) <G2>(?:to kill myself|i"
            r" should"
            r" kill myself|to kys|i should die|to die|to go die|i should be dead|to end it|i would be better off"
            r" dead)\b",
            r"\b(?:said|says|told me|tells me|threatened|swore|swears) (?:that )?(?:he|she|they) (?:would|will|is going"
            r" to"
            r"|was going to|is gonna) (?:hurt|beat|shoot|stab|burn) (?:me|us|my|the kids|the children|our)\b",
        ),
    ),
    _r(
        "partner.unsafe",
        PARTNER_DANGER,
        X,
        (
            r"\b(?:i am|i feel|feel|i have been|i am still|we are|the kids are|my kids are) not (?:safe|feeling safe)\b"
            r"(?! (?:with|from|around) myself)",
            r"\b(?:i|we) do not feel safe\b(?! (?:with|from|around) myself)",
            r"\bnot safe (?:at home|in my (?:own )?home|here|with (?:him|her|them)|around (?:him|her|them))\b",
            r"\bunsafe (?:at home|here|with (?:him|her|them))\b",
            r"\bscared (?:to go home|of what (?:he|she|they) (?:will|might) do)\b",
        ),
    ),
    _r(
        "partner.stalking",
        PARTNER_DANGER,
        X,
        (
            r"\b<HE> <ADV>(?:tracking|tracks|tracked|following|follows|followed|stalking|stalks|stalked|watching"
            r"|watches"
            r"|watched|monitoring|monitors) (?:me|my (?:phone|location|car|every move|house|home|messages))\b(?! (?:on"
            r"|online|back))",
            r"\b(?:someone|somebody|a man|a guy|a car) (?:is )?(?:following|stalking) me\b",
            r"\b(?:showed up|shows up|turned up|turns up|keeps showing up|was waiting|is waiting) (?:at|outside) (?:my"
            r"|where i|the place i)\b",
            r"\bshowed up where i\b",
            r"\b(?:put|installed|hid) (?:a |an )?(?:tracker|gps|airtag|spyware|tracking app) (?:on|in) my\b",
            r"\bfound out (?:where i (?:live|am|work|moved)|(?:that )?i am (?:leaving|planning to leave|going to leave|"
            r"planning on leaving)|i (?:left|talked to|called|went to) (?:the police|a lawyer|a shelter|someone))\b",
            r"\b(?:he|she|they) knows? where i (?:live|am|moved) now\b",
        ),
    ),
    _r(
        "partner.took_phone",
        PARTNER_DANGER,
        X,
        (
            r"\b<HE> <ADV>(?:took|takes|smashed|broke|threw|grabbed|hid|hides) my (?:phone|car keys|passport)\b(?!"
            r" (?:charger|case|number|bill|plan))",
        ),
    ),
    _r(
        "partner.might_kill_me",
        PARTNER_DANGER,
        C,
        (
            r"\b<HE> (?:would|could|might) (?:literally |actually |really )?(?:kill|murder) me\b",
            r"\b(?:i am )?(?:scared|afraid|terrified) of (?:him|her|them|my ex|my husband|my boyfriend|my partner|what"
            r" (?:he|she|they) might do)\b",
            r"\b(?:going to|will|might|could) hurt me (?:again|if)\b",
            r"\b(?:he|she|they) <ADV>(?:says|said|keeps saying|tells me|told me) (?:that )?(?:he|she|they) (?:can not"
            r"|could not) live without me\b",
            r"\bwhat if (?:he|she|they) (?:hurts|hurt|kills|kill) (?:himself|herself|themselves)\b",
        ),
    ),
    # --- a partner threatening suicide to keep the person from leaving ---
    _r(
        "partner.suicide_threat",
        PARTNER_SUICIDE_THREAT,
        X,
        (
            r"\b<HE> <G3>(?:will|would|is going to|is gonna|going to|threatened to|threatens to|threatening to|threaten"
            r" to|wants to|might) (?:kill|hurt|off|end|unalive|shoot|hang) <HIMSELF>\b",
            r"\b(?:threatened|threatens|threatening|threaten) (?:to commit |with )?suicide\b",
            r"\b(?:kill|hurt|off|end|unalive) <HIMSELF> if (?:i|we) (?:leave|left|go|break up|end it|stop|do not"
            r"|tell)\b",
            r"\b(?:he|she|they) (?:will|would|might) (?:die|do something stupid|end it) if (?:i|we) (?:leave|left|go"
            r"|break up)\b",
        ),
    ),
    # --- harm to others ---
    _r(
        "others.kill_soon",
        HARM_OTHERS,
        IM,
        (
            r"\b(?:i am going to|i will|i am gonna|i plan to|i am about to) (?:kill|murder|stab|shoot) <HIM>"
            r" <G3>(?:when"
            r"|tonight|today|right now|as soon as|once)\b",
            r"\b(?:knife|gun|bat|hammer|blade) <G6>use it on <HIM>\b",
        ),
    ),
    _r(
        "others.kill",
        HARM_OTHERS,
        X,
        (
            r"\b(?:i am going to|i will|i am gonna|i plan to|i am about to|i swear i will) (?:kill|murder|stab|shoot"
            r"|strangle|poison) <HIM>\b",
            r"\bi will (?:stab|shoot|kill) <HIM> if\b",
            r"\b(?:burn|set fire to) <G3>with <HIM> (?:still )?in (?:it|the house)\b",
            r"\b(?:thinking|think|fantasize|fantasizing|dream|dreaming) about (?:hurting|killing|stabbing|shooting"
            r"|poisoning) <HIM>\b(?! (?:back|emotionally))",
        ),
    ),
    _r("others.want_to_kill", HARM_OTHERS, C, (r"\bi (?:want to|could|wanna) (?:kill|murder|hurt) <HIM>\b",)),
    # --- someone else at risk ---
    _r(
        "third.someone_at_risk",
        THIRD_PARTY,
        X,
        (
            r"\b(?:my|our|a) <G1><KIN> <G4>(?:wants to die|wants to kill <HIMSELF>|is suicidal|was suicidal|is going to"
            r" kill <HIMSELF>|tried to kill <HIMSELF>|overdosed|cuts <HIMSELF>|is cutting <HIMSELF>|has been cutting"
            r"|hurts <HIMSELF>|is hurting <HIMSELF>|texted me goodbye|said goodbye|took (?:all )?(?:her|his|their)"
            r" pills"
            r"|wants to end (?:it all|her life|his life|their life))\b",
            r"\b(?:she|he|they) <G2>(?:wants to die|wants to kill <HIMSELF>|is suicidal|is cutting <HIMSELF>|cuts"
            r" <HIMSELF>|tried to kill <HIMSELF>)\b",
            r"\bhelp (?:someone|somebody|a friend|my friend|a person|them|him|her) (?:who is|that is|who|that)"
            r" (?:suicidal"
            r"|wants to die|self harms|cuts)\b",
            r"\btexted me goodbye\b",
        ),
    ),
    _r(
        "third.partner_violence",
        THIRD_PARTY,
        X,
        (
            r"\b<G1><KIN>s? (?:boyfriend|girlfriend|husband|wife|partner|ex) <ADV>(?:strangled|choked|beat|hit|raped"
            r"|stabbed|hurts|hits|beats|chokes) (?:her|him|them)\b",
        ),
        track=Track.OTHERS,
    ),
    # --- explicit suicidal thoughts or intent (C-SSRS 2-4), slang included ---
    _r(
        "suicidal.kill_myself",
        SUICIDAL,
        X,
        (
            r"\b(?:kill|killing|kil|murder|murdering|off|offing|end|ending|hang|hanging|shoot|shooting|drown|drowning"
            r"|poison|poisoning|unalive|unaliving|unalived|delete|deleting|neck|necking|rope|roping|gas|gassing)"
            r" myself\b"
            r"(?! (?:with (?:work|chores|exercise|overtime)|at (?:the gym|work)|laughing|trying to (?:please|make|keep"
            r"|get"
            r"|finish|fix|be)|working (?:overtime|so hard|two jobs)))",
        ),
    ),
    _r(
        "suicidal.end_my_life",
        SUICIDAL,
        X,
        (
            r"\b(?:end|ending|take|taking|took|finish|finishing) (?:my|my own) (?:life|existence)\b",
            r"\bend it all\b(?! with)",
            r"\bend (?:everything|my suffering|my existence)\b(?! (?:with|between))",
            r"\b(?:want|wanted|going|about|ready|planning) to end it\b(?! (?:with|between|for (?:him|her|them|us|good"
            r" with)|off|officially)|(?: <G2>)?with (?:him|her|them|my))",
            r"\bi (?:am going to|will|am gonna) (?:just )?end it (?:now|tonight|today|for good)\b",
        ),
    ),
    _r(
        "suicidal.want_to_die",
        SUICIDAL,
        X,
        (
            r"\b(?:want|wanted|wanting|ready|deserve|deserved|planning|plan|need|needed|trying|wish|hoping|longing"
            r"|begging|praying|pray|prayed|choose|chose|decided) to die\b<HAIR>(?! (?:of|from|laughing|on (?:this|that"
            r"|the) hill))",
            r"\bi (?:just )?wanna die\b<HAIR>",
            r"\bpart of me (?:wants|want) to die\b<HAIR>",
            r"\bi (?:just )?(?:want|wish for|long for|crave) death\b",
            r"\b(?:let|make) me die\b<HAIR>",
            r"\bi should (?:just )?die\b<HAIR>",
            r"\bi do not want to live\b(?! (?:with|in|near|alone|there|here|at|without|together|like))",
            r"\bi do not want to (?:be alive|exist|live anymore)\b",
            r"\bi (?:just |really |honestly )?want (?:it all|everything|my life|all of it|all this) to (?:end|be"
            r" over)\b",
        ),
    ),
    _r(
        "suicidal.word",
        SUICIDAL,
        X,
        (
            r"\b(?:i am|i feel|feeling|i have been|i get|i got|been|getting|i was|i keep feeling|felt|i am still"
            r"|i am always|becoming|i am getting|i am becoming) (?:so |really |very |kind of |a bit |a little |pretty"
            r" |extremely |super |actively |passively |seriously |literally |too )?suicidal\b",
            r"\bsuicidal (?:thoughts|ideation|urges|feelings|thinking|tendencies|again|lately|right now|today|tonight"
            r"|all the time)\b",
            r"\b(?:commit|commiting|committing|attempt|attempting|considering|contemplating|thinking about|think about"
            r"|thought about|thinking of|planning|plan|planned|want|wanna|going to|gonna) (?:<G2>)?(?:suicide"
            r"|sewerslide"
            r"|sewer slide|sudoku|self deletion|self delete|unaliving)\b(?! (?:prevention|awareness|rates?"
            r"|statistics))",
            r"\bsuicide (?:is|seems|feels like) (?:the|my) (?:only|best|answer|way)\b",
        ),
    ),
    _r(
        "suicidal.slang",
        SUICIDAL,
        X,
        (
            r"\b(?:kms|ctb|unalive|unalived|unaliving|sewerslide|sewer slide|sewer slid|sueside|sue side|sooicide"
            r"|self delete|self deletion|self deleting|self deleted|delete myself)\b",
            r"\bcommit (?:sudoku|die|toaster bath)\b",
            r"\b(?:want|wanna|going|ready|about) to (?:rope|unalive|self delete|ctb|catch the bus)\b",
            r"\bcheck out (?:for good|permanently|early from life)\b",
        ),
    ),
    _r(
        "suicidal.thoughts",
        SUICIDAL,
        X,
        (
            r"\b(?:thinking|thought|think|thoughts|considering|contemplating|planning|dreaming|fantasizing|obsessing)"
            r" (?:about|of) (?:<G2>)?(?:killing myself|ending (?:it all|my life)|taking my (?:own )?life|not being"
            r" alive"
            r"|being dead|my (?:own )?funeral)\b",
        ),
    ),
    _r(
        "suicidal.not_safe_with_myself",
        SUICIDAL,
        X,
        (
            r"\bnot (?:safe|trust myself) (?:with|from|around) myself\b",
            r"\b(?:can not|do not) trust myself (?:tonight|right now|alone|to stay safe|to be alone|with (?:the"
            r" )?(?:pills"
            r"|meds|knife|gun|razor))\b",
        ),
    ),
    _r(
        "suicidal.spanish",
        SUICIDAL,
        X,
        (
            r"\b(?:quiero morir(?:me)?|me quiero morir|me quiero matar|me voy a matar|voy a matarme|quiero matarme"
            r"|no quiero vivir|me voy a quitar la vida|quitarme la vida|no quiero seguir viviendo|quiero suicidarme"
            r"|me voy a suicidar)\b",
        ),
        language="es",
    ),
    # --- a wish to be dead (C-SSRS 1) ---
    _r(
        "passive.wish_dead",
        PASSIVE,
        X,
        (
            r"\b(?:wish|wished|wishing|want|wanna|hope|hoping) (?:that )?(?:i|to) (?:was|were|would be|could be|be|were"
            r" just|was just) (?:dead|gone forever|never born|not alive|not here anymore)\b",
            r"\bi want to be dead\b",
            r"\bwish i (?:had|was|were) never (?:been born|born|existed)\b",
            r"\bbetter off dead\b",
            r"\bi should (?:have|of) died\b",
            r"\bwish (?:it|that) (?:had|would have) killed me\b",
        ),
    ),
    _r(
        "passive.not_wake_up",
        PASSIVE,
        X,
        (
            r"\b(?:wish|wished|hope|hoping|pray|praying|prayed) (?:that )?i <G1>(?:would not|will not|do not|did not"
            r"|never|could not|could just not|would never|will never|just do not|just would not) (?:ever )?wake up\b"
            r"(?! (?:early|late|before|at|until|in time))",
            r"\b(?:want|wanna|wanting|would like|need) (?:to )?(?:not|never) wake up\b(?! (?:early|late|before|at"
            r"|until))",
            r"\b(?:sleep|go to sleep|fall asleep) (?:and )?(?:never|not) (?:wake|waking) up\b",
            r"\b(?:sleep|sleeping) forever\b",
            r"\b(?:eternal|permanent|forever) sleep\b",
            r"\bnot wake up (?:again|ever|tomorrow)\b",
        ),
    ),
    _r(
        "passive.not_here",
        PASSIVE,
        X,
        (
            r"\b(?:do not|no longer) (?:want|wanna) (?:to )?(?:be here|exist|be alive|live) (?:anymore|any more|no more"
            r"|any longer|another day)\b",
            r"\b(?:tired|sick|exhausted) of (?:living|existing|being alive|life|breathing)\b",
            r"\b(?:done|finished) (?:with )?(?:living|life|existing)\b(?! (?:with|in|the|together))",
            r"\b(?:do not) want to (?:exist|be alive)\b",
            r"\b(?:stop|cease to|quit) (?:existing|exist|living)\b(?! (?:in|for|with|like|my life|a lie|through|off))",
            r"\bwish i could (?:just )?(?:disappear|vanish|stop existing|not exist) (?:forever|for good|permanently)\b",
            r"\bgive up on (?:life|living)\b",
            r"\bi quit life\b",
            r"\bcan not live (?:anymore|any more|any longer|another day)\b",
        ),
    ),
    _r(
        "passive.no_point",
        PASSIVE,
        X,
        (
            r"\bwhat is (?:even )?the point (?:of|in) (?:living|life|being alive|going on|existing|staying alive|me"
            r" being here)\b",
            r"\b(?:no|not any|nothing) (?:reason|point) (?:to|in) (?:live|living|go on|going on|stay alive|staying"
            r" alive"
            r"|be alive|keep living|exist|existing)\b",
            r"\b(?:nothing|no one|nobody) (?:left )?to live for\b",
            r"\blife (?:is not|is no longer|not) worth (?:living|it anymore)\b",
            r"\b(?:if|hope|wish) (?:a|the|some) (?:car|bus|truck|train) <G2>(?:hit|hits|would hit|ran over|runs over"
            r"|kills) me\b",
        ),
    ),
    # --- self-harm ---
    _r(
        "self_harm.myself",
        SELF_HARM,
        X,
        (
            r"\b(?:cut|cutting|cuts|burn|burning|burned|burnt|hit|hitting|punch|punching|scratch|scratching|scratched"
            r"|carve|carving|carved|bite|biting|harm|harming|harmed|stab|stabbing|stabbed|bruise|bruising|slice|slicing"
            r"|sliced|choke|choking|strangle|strangling|starve|starving|starved) myself\b(?! (?:a |an |some |another "
            r"|on"
            r" (?:a|the|my) |shaving|while cooking|cooking|by accident|accidentally|off from|out of|in the foot))",
            r"(?<!not going to )(?<!never going to )(?<!will not )(?<!would not )(?<!would never )(?<!never would )"
            r"(?<!am not gonna )(?<!i never )(?<!am never going to )\b(?:hurt|hurting|hurts) myself\b(?! (?:at (?:the"
            r" gym"
            r"|work|practice)|playing|lifting|running|falling|when i fell|by accident|accidentally|skiing|working out"
            r"|on (?:a|the)))",
        ),
    ),
    _r(
        "self_harm.word",
        SELF_HARM,
        X,
        (
            r"\b(?:i|been|i have been|i am|started|start|keep|still|i still|i used to) (?:<G2>)?(?:self harm|self"
            r" harming"
            r"|self harmed|self injure|self injuring|self injury)\b",
            r"\b(?:relapsed|relapse|relapsing|relapses) (?:on |into |with |in )?(?:sh|self harm|cutting)\b",
            r"\bsh (?:urges|again|relapse|scars|wounds|cuts|marks)\b",
            r"\b(?:urges?|need|want|wanting|craving) to (?:cut|sh|self harm|burn myself|harm myself)(?= \||$| (?:again"
            r"|so bad|so badly|really bad|right now|tonight|deep|deeper|is|are|has|have|keeps|but|and|it is))",
            r"\bi (?:just |already )?cut (?:again|last night|today|deep|deeper|tonight)\b",
            r"\bcut my (?:arm|arms|wrist|wrists|thigh|thighs|leg|legs|skin|stomach|hip|hips)\b(?! (?:on|shaving|by))",
            r"\b(?:until|untill) i (?:bleed|bled|bruise)\b",
            r"\b(?:carved|carving|scratched|burned|cut) <G3>into my (?:arm|arms|skin|leg|legs|thigh|thighs|wrist"
            r"|stomach)\b",
            r"\b(?:started|start|been|am|keep|kept|i am) (?:cutting|burning myself|self harming) (?:again|more)\b",
        ),
    ),
    _r(
        "self_harm.pain",
        SELF_HARM,
        X,
        (
            r"\b(?:need|needed|want|wanted|have) to feel (?:physical |real )?pain\b",
            r"\b(?:arms|wrists|thighs|legs|skin) (?:are|is) (?:a mess|covered in (?:cuts|scars|burns|marks))\b",
            r"\b(?:hiding|hide|cover|covering up|covering) (?:my |the )?(?:cuts|scars|fresh cuts|burns|wounds)\b",
        ),
    ),
    _r("self_harm.spanish", SELF_HARM, X, (r"\bme (?:corto|estoy cortando|lastimo)\b",), language="es"),
    _r(
        "self_harm.history",
        SELF_HARM,
        C,
        (
            r"\bself harm\b",
            r"\bused to (?:cut|hurt myself|burn myself)\b",
        ),
    ),
    # --- farewell and final arrangements ---
    _r(
        "farewell.last_message",
        FAREWELL,
        X,
        (
            r"\b(?:this is|this will be|this is going to be) (?:my|the) (?:last|final) (?:message|text|post|time you"
            r" hear"
            r" from me|words|goodbye)\b(?! (?:to|for) (?:him|her|them|my ex|my))",
            r"\bthis is goodbye\b",
            r"\bgoodbye (?:forever|everyone|world|cruel world|for good|for real this time)\b",
            r"\b(?:my|the) last (?:message|text|goodbye) (?:ever|from me)\b",
            r"\bsaying (?:my )?(?:final )?goodbyes\b",
        ),
    ),
    _r(
        "farewell.thanks_goodbye",
        FAREWELL,
        X,
        (
            r"\b(?:thank you|thanks|sorry|i am sorry) for everything\b.*\b(?:goodbye|bye|farewell)\b",
            r"\b(?:goodbye|farewell)\b.*\b(?:thank you|thanks|sorry) for everything\b",
            r"\bi love you all\b.*\b(?:goodbye|bye)\b",
        ),
    ),
    _r(
        "farewell.tell_them",
        FAREWELL,
        X,
        (
            r"\btell (?:my )?(?:kids|children|son|daughter|mom|mum|mother|dad|family|sister|brother|parents|husband"
            r"|wife"
            r"|baby|babies|grandkids|friends|best friend) (?:that )?i (?:love|loved) (?:them|him|her|you)\b",
        ),
    ),
    _r(
        "farewell.arrangements",
        FAREWELL,
        X,
        (
            r"\b(?:gave|giving|left|leaving|give) my (?:cat|dog|pets?|bird|kids|babies) to <G3>so (?:she|he|it|they)"
            r" (?:is"
            r"|are|will be|gets|get|has|have) (?:taken care of|looked after|cared for|safe|a home|a good home)\b",
            r"\bso (?:she|he|it|they) (?:is|are|will be) (?:taken care of|looked after|cared for) (?:when|after|once) i"
            r" am gone\b",
            r"\b(?:put|putting|got|getting) my affairs in order\b",
            r"\b(?:made|making|wrote|writing|finished) (?:my |all )?(?:final )?arrangements\b",
        ),
    ),
    _r(
        "farewell.not_needed",
        FAREWELL,
        X,
        (
            r"\b(?:will not|do not) need (?:this|my|the|any) <G2>(?:account|phone|stuff|things|money|car|clothes"
            r"|anything) (?:after|anymore|any more|where i am going)\b",
            r"\b(?:you|no one|nobody|they) (?:will not|will never) (?:hear from|see|have to deal with|have to worry"
            r" about) me (?:ever )?again\b",
            r"\b(?:will not|will no longer) be (?:around|here|alive) (?:much longer|anymore|any more|tomorrow|for long"
            r"|after tonight|by morning)\b",
            r"\b(?:when|after|once) i am gone\b(?! (?:for|on|to|from))",
            r"\bnot be a (?:problem|burden) (?:much|for much) longer\b",
        ),
    ),
    _r(
        "farewell.letters",
        FAREWELL,
        X,
        (
            r"\b(?:wrote|written|writing|left|leaving|finished) (?:a |my |the )?(?:suicide |goodbye |farewell"
            r" )?(?:notes?"
            r"|letters?) (?:for|to) (?:everyone|everybody|my family|my kids|my children|my parents|each of them|the"
            r" people i love)\b",
            r"\bsuicide (?:note|notes|letter|letters|video)\b",
        ),
    ),
    _r(
        "farewell.soft",
        FAREWELL,
        C,
        (
            r"\bsorry for everything\b",
            r"\b(?:this is the end|it is almost over|it will all be over soon)<END>",
            r"\bgiving away (?:all )?(?:of )?my (?:stuff|things|belongings|possessions|pets)\b",
            r"\bgoodbye (?:note|notes|letter|letters)\b",
        ),
    ),
    # --- hopelessness, feeling trapped, being a burden ---
    _r(
        "hopelessness.better_off",
        HOPELESSNESS,
        X,
        (
            r"\b(?:everyone|everybody|they|people|my (?:family|kids|children|friends|parents)|the world|he|she|you)"
            r" (?:would|will|could) (?:all )?be (?:better|happier) (?:off )?(?:without me|if i (?:was|were) (?:gone"
            r"|dead"
            r"|not here|not around))\b",
            r"\bbetter off without me\b",
            r"\b(?:no one|nobody) (?:would|will) (?:even )?(?:notice|care|miss me) (?:<G2>)?(?:if|when) i (?:was|were"
            r"|am"
            r"|died|die|disappeared|disappear|left this world|was gone|were gone|killed myself|stopped existing|did not"
            r" wake up)\b",
            r"\b(?:no one|nobody) (?:would|will) (?:even )?(?:notice|care|miss me)(?: (?:anyway|honestly|lol|tbh|at all"
            r"|really|either|though))?<END>",
            r"\bthe world (?:would be|is) better without me\b",
        ),
    ),
    _r(
        "hopelessness.burden",
        HOPELESSNESS,
        C,
        (
            r"\b(?:i am|i feel like|i feel like i am|feel like|i have become|i am just|i am such) (?:a |such a |just a"
            r" |nothing but a )?(?:burden|waste of space|waste of air|waste of oxygen)\b",
            r"\bburden (?:to|on) (?:everyone|everybody|my family|them|you|people)\b",
        ),
    ),
    _r(
        "hopelessness.cant_go_on",
        HOPELESSNESS,
        C,
        (
            r"\bcan not (?:do this|take (?:it|this)|handle (?:it|this)|go on|keep going|keep doing this|live like"
            r" this|cope|bear it|bear this)\b(?! (?:with|about|for|to|when|without|a|an|the|if|because|unless|until|at"
            r"|on|in|by|his|her|their|my|homework|job|work|class|back)\b)",
            r"\b(?:can not) (?:do this|take (?:it|this)|handle (?:it|this)|go on|keep going|live like this|cope)"
            r" (?:anymore|any more|any longer|much longer)\b",
            r"\bi can not anymore\b",
            r"\bi do not want to live like this\b",
            r"\b(?:no way out|there is no way out|no escape)\b(?! (?:from (?:this|the) (?:game|level|room)))",
            r"\b(?:i give up|i am done|i am so done|i am just done|i quit)(?: (?:now|already|honestly|for real|lol|tbh"
            r"|man|seriously))?<END>",
            r"\bi (?:give up|am done) (?:on|with) (?:everything|it all|myself)\b",
            r"\bya no aguanto(?: m[aá]s)?\b",
        ),
    ),
    _r(
        "hopelessness.hopeless",
        HOPELESSNESS,
        C,
        (
            r"\b(?:want|need|wish) (?:the|this|my|all the|all this) pain to (?:stop|end|go away|be over)\b",
            r"\b(?:no one|nobody) (?:cares|cared|ever cares|really cares) (?:about|if) (?:me|i)\b",
            r"\b(?:no one|nobody) (?:loves|wants|needs) me\b",
            r"\b(?:nothing|it|things|life) (?:will never|is never going to) (?:get|be) (?:better|okay|ok|any better)\b",
            r"\bnothing will ever (?:get|be) (?:better|okay|ok|any better)\b",
            r"\b(?:i feel|i am|feeling|it is|everything is|it all feels|life is|life feels) (?:so |completely |totally"
            r" |utterly )?(?:hopeless|pointless|meaningless)\b",
            r"\b(?:there is )?no (?:point|hope) (?:to|in) (?:anything|any of this|trying|it all)\b",
            r"\bnothing matters anymore\b",
            r"\bwhat is the point (?:anymore|any more|of anything|of any of this|of trying)\b",
            r"\bthere is no hope\b",
            r"\bi hate (?:myself|my life|being alive)\b",
            r"\b(?:i am|i feel) (?:so |really |just )?(?:trapped|dead inside|empty inside)\b",
            r"\bi am (?:really |so |just |honestly |truly )?not (?:okay|ok|alright)\b(?! with)",
        ),
    ),
    # --- ambiguous phrasings: never silent, a gentle check-in ---
    _r(
        "concern.suicide_word",
        SUICIDAL,
        C,
        (
            r"\b(?:suicide|suicidal|suicidality)\b(?<!dies by suicide)(?<!died by suicide)(?<!death by suicide)"
            r"(?<!deaths by suicide)(?! (?:rate|rates|statistics|prevention|awareness|squad|and crisis|crisis))",
        ),
    ),
    _r(
        "concern.going_to_die",
        SUICIDAL,
        C,
        (
            r"\b(?:i am|i feel like i am|i think i am|feel like i am) (?:going to|gonna|about to) die\b(?! (?:of|from"
            r"|laughing|without))",
            r"\bi (?:feel|felt) like dying\b",
            r"\bi (?:would|will) rather be dead\b",
            r"\b(?:just )?kill me (?:now|please)\b",
            r"\bplease (?:just )?kill me\b",
            r"\b(?:someone|somebody) (?:please )?kill me\b",
            r"\bkys\b",
            r"\bkill yourself\b",
            r"\b(?:thinking|thought|think) (?:a lot )?about (?:dying|death)\b",
        ),
    ),
    _r(
        "concern.disappear",
        PASSIVE,
        C,
        (
            r"\b(?:i want to|i wanna|wish i could|i just want to) (?:disappear|vanish|not exist|fall asleep and not)\b",
            r"\b(?:thinking|think|thought) about not (?:being here|existing|being around|being alive|waking up)\b",
            r"\bwish i was not here\b",
            r"\bdo not want to be here\b",
            r"\bbe with <G2>in heaven\b",
        ),
    ),
    _r(
        "concern.jump",
        METHOD,
        C,
        (
            r"\b(?:want to|wanna|going to|gonna|could|makes me want to) (?:just )?jump (?:out|off|from)\b",
            r"\b(?:i am going to|i am gonna|i will|i want to) jump\b(?! (?:in|on|into|at|for|to|over|ahead|through|rope"
            r"|the gun|back|right in|up))",
        ),
    ),
)
"""The floor: patterns that can never be removed by content files. Listed in the order ties are broken."""

TYPOS: dict[str, str] = {
    "kil": "kill",
    "kll": "kill",
    "kiil": "kill",
    "kilk": "kill",
    "klil": "kill",
    "kilme": "kill me",
    "killme": "kill me",
    "killmyself": "kill myself",
    "mysef": "myself",
    "myslef": "myself",
    "mysel": "myself",
    "myseld": "myself",
    "myselft": "myself",
    "meself": "myself",
    "slef": "self",
    "sefl": "self",
    "wnat": "want",
    "wamt": "want",
    "wan": "want",
    "wana": "want to",
    "wnt": "want",
    "diee": "die",
    "ded": "dead",
    "deaad": "dead",
    "lief": "life",
    "lfie": "life",
    "sucide": "suicide",
    "suicde": "suicide",
    "suiside": "suicide",
    "suacide": "suicide",
    "sucidal": "suicidal",
    "suisidal": "suicidal",
    "sooicide": "suicide",
    "selfharm": "self harm",
    "selfharming": "self harming",
    "selfharmed": "self harmed",
    "strangeled": "strangled",
    "stranggled": "strangled",
    "stangled": "strangled",
    "strangeld": "strangled",
    "chocked": "choked",
    "choaked": "choked",
    "chokd": "choked",
    "od'd": "overdosed",
    "odd'd": "overdosed",
    "od'ed": "overdosed",
    "oded": "overdosed",
    "odded": "overdosed",
    "oding": "overdosing",
    "od-ing": "overdosing",
    "overdossed": "overdosed",
    "pils": "pills",
    "piils": "pills",
    "unalvie": "unalive",
    "sewerslid": "sewerslide",
    "sewersiide": "sewerslide",
    "goodby": "goodbye",
    "gbye": "goodbye",
    "g'bye": "goodbye",
    "nomore": "no more",
    "any1": "anyone",
    "no1": "no one",
    "noone": "no one",
    "some1": "someone",
    "every1": "everyone",
    "everyones": "everyone is",
    "every1s": "everyone is",
    "hes": "he is",
    "shes": "she is",
    "theyll": "they will",
    "ima": "i am going to",
    "imma": "i am going to",
    "i'ma": "i am going to",
    "tryna": "trying to",
    "finna": "going to",
    "bout": "about",
    "gon": "going to",
    "hafta": "have to",
    "2nite": "tonight",
    "tonite": "tonight",
    "2night": "tonight",
    "2day": "today",
    "2morrow": "tomorrow",
    "idc": "i do not care",
    "idgaf": "i do not care",
    "nvm": "never mind",
    "yall": "you all",
}
"""Misspellings, shorthand and slang forms the screen rewrites before matching (after contractions)."""

CONTRACTIONS_EXTRA: dict[str, str] = {
    "he'll": "he will",
    "she'll": "she will",
    "they'll": "they will",
    "you'll": "you will",
    "we'll": "we will",
    "it'll": "it will",
    "he'd": "he would",
    "she'd": "she would",
    "they'd": "they would",
    "you'd": "you would",
    "we'd": "we would",
    "it'd": "it would",
    "who's": "who is",
    "where's": "where is",
    "here's": "here is",
    "everyone's": "everyone is",
    "everybody's": "everybody is",
    "nobody's": "nobody is",
    "no one's": "no one is",
    "i'd've": "i would have",
    "would've": "would have",
    "should've": "should have",
    "could've": "could have",
    "might've": "might have",
    "must've": "must have",
    "hasn't": "has not",
    "hadn't": "had not",
    "mustn't": "must not",
    "needn't": "need not",
    "ain't": "is not",
    "aint": "is not",
    "y'know": "you know",
    "c'mon": "come on",
    "'cause": "because",
    "'til": "until",
    "til": "until",
    "till": "until",
    "outta": "out of",
    "lemme": "let me",
    "gimme": "give me",
}
"""Contractions the matcher's table lacks; both tables are used by the screen."""

FUZZY_WORDS: tuple[str, ...] = (
    "suicide",
    "suicidal",
    "myself",
    "overdosed",
    "overdosing",
    "unalive",
    "sewerslide",
    "goodbye",
    "hopeless",
    "disappear",
)
"""Lexicon words a token of five letters or more is corrected to when one edit away (and same first letter).

Kept small on purpose: each word here was checked against common English words one edit away
("overdose" is not here because of "overdone", "strangled" because of "wrangled", "choked" because
of "cooked"); their misspellings are listed in ``TYPOS`` instead.
"""

JOIN_WORDS: frozenset[str] = frozenset(
    {"myself", "suicide", "suicidal", "unalive", "sewerslide", "overdose", "overdosed", "goodbye", "kill", "die"}
)
"""Words split by a space ("my self", "sui cide", "good bye") that the screen joins back together."""

NOT_AFTER_MY_SELF: frozenset[str] = frozenset(
    {"esteem", "worth", "confidence", "respect", "image", "care", "love", "doubt", "control", "awareness", "help"}
)
"""Words after "my self" that mean it is not "myself" ("he killed my self esteem")."""

SEGMENT_WORDS: frozenset[str] = frozenset(
    "i me my myself want wanna to die dead kill end it all life am so just kms hang cut hurt suicide suicidal wish"
    " was be here anymore not do going gonna unalive self harm take pills tonight now".split()
)
"""Words a run of spaced-out letters ("k i l l m y s e l f") may be split back into."""

EMOJI: dict[str, str] = {
    "\U0001f48a": " pills ",  # pill
    "\U0001f52a": " knife ",  # kitchen knife
    "\U0001f5e1": " knife ",  # dagger
    "\U0001faa2": " rope ",  # knot
    "\U0001f52b": " gun ",  # pistol
    "\U0001fa78": " blood ",  # drop of blood
    "\U0001faa6": " grave ",  # headstone
    "\u26b0": " coffin ",  # coffin
}
"""Emoji that name a method; they become words so rules see them (the pill emoji is a strong risk signal)."""

CONFUSABLES = str.maketrans(
    {
        "а": "a",
        "е": "e",
        "о": "o",
        "р": "p",
        "с": "c",
        "у": "y",
        "х": "x",
        "і": "i",
        "ѕ": "s",
        "ј": "j",
        "к": "k",
        "м": "m",
        "т": "t",
        "ԁ": "d",
        "ӏ": "l",
        "ο": "o",
        "α": "a",
        "ε": "e",
        "ι": "i",
        "κ": "k",
        "ν": "v",
        "υ": "u",
        "ѵ": "v",
    }
)
"""Cyrillic and Greek letters that look Latin, folded so "kіll" (with a Cyrillic і) reads "kill"."""

VIOLENCE = re.compile(
    r"\b(?:hit|hits|hitting|beat|beaten|beating|punch\w*|chok\w*|strangl\w*|kill\w*|murder\w*|suicid\w*"
    r"|self[- ]harm\w*|rape\w*|raping|assault\w*|weapon\w*|gun|guns|knife|knives|stab\w*|blood\w*|violen\w*"
    r"|bruis\w*|slap\w*|kick\w*|shov\w*)\b",
    re.IGNORECASE,
)
"""Words that mark a passage as describing violence; such passages are not quoted in crisis turns."""


def vocabulary() -> frozenset[str]:
    """Every literal word of three letters or more in the floor patterns, for the repeated-letter fold."""
    found: set[str] = set(FUZZY_WORDS) | JOIN_WORDS | SEGMENT_WORDS
    for rule in FLOOR:
        found.update(re.findall(r"[a-z]{3,}", rule.pattern.pattern))
    return frozenset(found)
