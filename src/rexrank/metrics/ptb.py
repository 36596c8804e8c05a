"""pycocoevalcap's PTB tokenisation in pure Python: what ``PTBTokenizer().tokenize`` returns, without Java.

What it reproduces (pycocoevalcap 1.2, PyPI, ``tokenizer/ptbtokenizer.py``): every caption has its '\\n' replaced by
' ', the captions are joined with '\\n' into one file, and Stanford CoreNLP 3.4.1's
``edu.stanford.nlp.process.PTBTokenizer -preserveLines -lowerCase`` (``stanford-corenlp-3.4.1.jar``) tokenises it:
the lexer is ``PTBLexer.flex`` of CoreNLP v3.4.1 with its default options (ptb3Escaping: brackets become -LRB- etc.,
" becomes `` or '', ellipses "...", en/em dashes "--", fractions like ½ "1/2", no americanize, no escaping of / and *,
untokenizable characters deleted) plus ``tokenizeNLs`` (so -preserveLines can keep lines); each token is lower-cased
(``toLowerCase(Locale.ENGLISH)``), tokens are written space-separated and every newline token starts a new line.
pycocoevalcap then zips its caption ids with ``output.split('\\n')`` and keeps, per line,
``' '.join(w for w in line.rstrip().split(' ') if w not in PUNCTUATIONS)``.

The PUNCTUATIONS list has "-LRB-", "-RRB-", "-LCB-", "-RCB-" in upper case while -lowerCase emits "-lrb-" ..., so
brackets SURVIVE as "-lrb-", "-rrb-", "-lcb-", "-rcb-", "-lsb-", "-rsb-"; that is reproduced (it is what every
paper scored with pycocoevalcap measured), not corrected.

How: the lexer's rules are the regular expressions below, in the .flex file's order, applied with JFlex's rule:
the longest match wins (a rule's trailing context ``r1/r2`` counts in its length), the earliest rule breaks ties;
each rule's action (push-backs, quote and bracket normalisation, soft-hyphen removal, ...) is reproduced.

Quirks of pycocoevalcap that ``tokenize_all`` reproduces ON PURPOSE (say so when you compare with other code):

* A caption's tokens can depend on the next caption: the lexer looks past the '\\n' that joins captions, e.g.
  "Grade I." gives "grade i" before a caption "The end here" and "grade i." when last; "Ref No." gives "ref no."
  before "5 cm" and "ref no" when last.  ``tokenize(text)`` is ``tokenize_all([text])[0]`` (the only caption).
* OUTPUT SHIFT: a caption holding another newline character than '\\n' (\\r, \\v, \\f, U+2028, U+2029; "\\r\\n"
  becomes "\\r " first; U+0085 is read as an ellipsis, not a newline) makes the Java tool emit an extra line, and
  pycocoevalcap zips ids with lines, so EVERY LATER CAPTION GETS THE TOKENS OF THE CAPTION BEFORE IT and the last
  ones are lost.  That is pycocoevalcap 1.2's real output (checked against it in tests/test_ptb_tokenizer.py) and
  ``tokenize_all`` returns the same shifted list; clean such characters before scoring if you do not want it.
  Empty captions do NOT shift anything (an empty line stays a line) and come back as "".

Known limits (not proven identical; the parity tests cover all IU-Xray findings and impressions and a curated list
of hard strings, and during development 500,000 random and perturbed strings and every BMP character in eight
contexts agreed with the jar, except the first item below):

* Lower-casing is Python's ``str.lower``; the jar lower-cases with the JVM that runs it (Java 17: Unicode 13), so
  upper-case letters new in later Unicode versions differ: "U+2C2F" (GLAGOLITIC CAPITAL LETTER CAUDATE CHRI) stays
  upper case with Java 17 and is lower-cased here (likewise U+A7C0, U+A7D0, U+A7D6, U+A7D8).
* Python's ``re`` returns the first match of a pattern, JFlex the longest: the patterns are ordered so that the
  first match is the longest, and bounded rules (phone numbers, dates, fractions) search for the longest; exotic
  nested cases (SGML tags with quoted '>' in attributes, e-mail-like strings with several '@') are not proven.
* JFlex 1.4.3 mis-splits some variable-length trailing contexts (CoreNLP's own comments work around it for
  acronyms before a capitalised word and for "ca." / "fig." before a number); the split here is the intended one.
* Characters outside the BMP: the jar sees two UTF-16 halves, deleted as untokenizable unless inside a URL or
  e-mail token, which is what happens here to the whole character.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from collections.abc import Iterable
from functools import lru_cache

from rexrank.errors import InputError

# Identifies this reproduction in a metric's config (nlg.py, meteor.py read it).
VERSION = "pycocoevalcap-1.2/corenlp-3.4.1-ptb/py1"

# pycocoevalcap 1.2 tokenizer/ptbtokenizer.py PUNCTUATIONS (upper-case brackets included: they never match).
PUNCTUATIONS = frozenset(["''", "'", "``", "`", "-LRB-", "-RRB-", "-LCB-", "-RCB-",
                          ".", "?", "!", ",", ":", "-", "--", "...", ";"])

# The jar's [:letter:] and [:digit:] (Java Character.isLetter / isDigit as JFlex 1.4.3 tabulated them: Unicode 6.2,
# BMP only), as pairs of 4-hex-digit code points (first, last).  Source: PTBLexer.ZZ_CMAP of
# stanford-corenlp-3.4.1.jar (read by reflection) and the jar's own output on probe strings for every character class
# in it.  Python's unicodedata cannot stand in: it is Unicode 14 or later (U+0528-U+052F are letters there, not here).
_L_RANGES = (
    "0041005a0061007a00aa00aa00b500b500ba00ba00c000d600d800f600f802c102c602d102e002e402ec02ec02ee02ee0370037403760377"
    "037a037d038603860388038a038c038c038e03a103a303f503f70481048a052705310556055905590561058705d005ea05f005f20620064a"
    "066e066f067106d306d506d506e506e606ee06ef06fa06fc06ff06ff071007100712072f074d07a507b107b107ca07ea07f407f507fa07fa"
    "08000815081a081a08240824082808280840085808a008a008a208ac09040939093d093d0950095009580961097109770979097f0985098c"
    "098f0990099309a809aa09b009b209b209b609b909bd09bd09ce09ce09dc09dd09df09e109f009f10a050a0a0a0f0a100a130a280a2a0a30"
    "0a320a330a350a360a380a390a590a5c0a5e0a5e0a720a740a850a8d0a8f0a910a930aa80aaa0ab00ab20ab30ab50ab90abd0abd0ad00ad0"
    "0ae00ae10b050b0c0b0f0b100b130b280b2a0b300b320b330b350b390b3d0b3d0b5c0b5d0b5f0b610b710b710b830b830b850b8a0b8e0b90"
    "0b920b950b990b9a0b9c0b9c0b9e0b9f0ba30ba40ba80baa0bae0bb90bd00bd00c050c0c0c0e0c100c120c280c2a0c330c350c390c3d0c3d"
    "0c580c590c600c610c850c8c0c8e0c900c920ca80caa0cb30cb50cb90cbd0cbd0cde0cde0ce00ce10cf10cf20d050d0c0d0e0d100d120d3a"
    "0d3d0d3d0d4e0d4e0d600d610d7a0d7f0d850d960d9a0db10db30dbb0dbd0dbd0dc00dc60e010e300e320e330e400e460e810e820e840e84"
    "0e870e880e8a0e8a0e8d0e8d0e940e970e990e9f0ea10ea30ea50ea50ea70ea70eaa0eab0ead0eb00eb20eb30ebd0ebd0ec00ec40ec60ec6"
    "0edc0edf0f000f000f400f470f490f6c0f880f8c1000102a103f103f10501055105a105d1061106110651066106e107010751081108e108e"
    "10a010c510c710c710cd10cd10d010fa10fc1248124a124d1250125612581258125a125d12601288128a128d129012b012b212b512b812be"
    "12c012c012c212c512c812d612d81310131213151318135a1380138f13a013f41401166c166f167f1681169a16a016ea1700170c170e1711"
    "17201731174017511760176c176e1770178017b317d717d717dc17dc18201877188018a818aa18aa18b018f51900191c1950196d19701974"
    "198019ab19c119c71a001a161a201a541aa71aa71b051b331b451b4b1b831ba01bae1baf1bba1be51c001c231c4d1c4f1c5a1c7d1ce91cec"
    "1cee1cf11cf51cf61d001dbf1e001f151f181f1d1f201f451f481f4d1f501f571f591f591f5b1f5b1f5d1f5d1f5f1f7d1f801fb41fb61fbc"
    "1fbe1fbe1fc21fc41fc61fcc1fd01fd31fd61fdb1fe01fec1ff21ff41ff61ffc20712071207f207f2090209c2102210221072107210a2113"
    "211521152119211d212421242126212621282128212a212d212f2139213c213f21452149214e214e218321842c002c2e2c302c5e2c602ce4"
    "2ceb2cee2cf22cf32d002d252d272d272d2d2d2d2d302d672d6f2d6f2d802d962da02da62da82dae2db02db62db82dbe2dc02dc62dc82dce"
    "2dd02dd62dd82dde2e2f2e2f3005300630313035303b303c30413096309d309f30a130fa30fc30ff3105312d3131318e31a031ba31f031ff"
    "34004db54e009fcca000a48ca4d0a4fda500a60ca610a61fa62aa62ba640a66ea67fa697a6a0a6e5a717a71fa722a788a78ba78ea790a793"
    "a7a0a7aaa7f8a801a803a805a807a80aa80ca822a840a873a882a8b3a8f2a8f7a8fba8fba90aa925a930a946a960a97ca984a9b2a9cfa9cf"
    "aa00aa28aa40aa42aa44aa4baa60aa76aa7aaa7aaa80aaafaab1aab1aab5aab6aab9aabdaac0aac0aac2aac2aadbaaddaae0aaeaaaf2aaf4"
    "ab01ab06ab09ab0eab11ab16ab20ab26ab28ab2eabc0abe2ac00d7a3d7b0d7c6d7cbd7fbf900fa6dfa70fad9fb00fb06fb13fb17fb1dfb1d"
    "fb1ffb28fb2afb36fb38fb3cfb3efb3efb40fb41fb43fb44fb46fbb1fbd3fd3dfd50fd8ffd92fdc7fdf0fdfbfe70fe74fe76fefcff21ff3a"
    "ff41ff5aff66ffbeffc2ffc7ffcaffcfffd2ffd7ffdaffdc"
)
_D_RANGES = (
    "003000390660066906f006f907c007c90966096f09e609ef0a660a6f0ae60aef0b660b6f0be60bef0c660c6f0ce60cef0d660d6f0e500e59"
    "0ed00ed90f200f29104010491090109917e017e9181018191946194f19d019d91a801a891a901a991b501b591bb01bb91c401c491c501c59"
    "a620a629a8d0a8d9a900a909a9d0a9d9aa50aa59abf0abf9ff10ff19"
)


def _ranges(table: str) -> list[tuple[int, int]]:
    return [(int(table[i:i + 4], 16), int(table[i + 4:i + 8], 16)) for i in range(0, len(table), 8)]


def _class_body(ranges: Iterable[tuple[int, int]]) -> str:
    """A regex character-class body for code-point ranges."""
    return "".join(f"\\u{a:04x}" if a == b else f"\\u{a:04x}-\\u{b:04x}" for a, b in ranges)


def _codes(ranges: Iterable[tuple[int, int]]) -> set[int]:
    return {code for a, b in ranges for code in range(a, b + 1)}


def _ranges_of(codes: Iterable[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for code in sorted(codes):
        if out and out[-1][1] == code - 1:
            out[-1] = (out[-1][0], code)
        else:
            out.append((code, code))
    return out


_LETTERS, _DIGITS = _codes(_ranges(_L_RANGES)), _codes(_ranges(_D_RANGES))
# JFlex [:uppercase:] (Java isUpperCase): the jar's letters of category Lu (Cherokee U+13A0-U+13F4 became Lu only in
# Unicode 8, after the jar's 6.2) plus Other_Uppercase (Roman numerals, circled capitals).
_UPPERS = ({code for code in _LETTERS if unicodedata.category(chr(code)) == "Lu" and not 0x13A0 <= code <= 0x13F4}
           | _codes([(0x2160, 0x216F), (0x24B6, 0x24CF)]))

# Big character classes make Python's regex compiler slow (about 10 ms per use of the letter class, tens of uses), so
# the lexer runs on a shadow of the text: outside the blocks below, where no rule names a character explicitly, every
# letter becomes U+0436 (or U+0416 if upper case) and every digit U+0663, characters that behave identically in every
# rule.  Tokens are then cut from the original text at the same positions.
_KEEP = _codes([(0x0000, 0x0FFF), (0x1F00, 0x2BFF), (0x3000, 0x30FF), (0xFE00, 0xFFFF)])
_SHADOW = {code: ("\u0416" if code in _UPPERS else "\u0436") for code in _LETTERS - _KEEP}
_SHADOW.update({code: "\u0663" for code in _DIGITS - _KEEP})
_LET = _class_body(_ranges_of(_LETTERS & _KEEP))
_DIG = _class_body(_ranges_of(_DIGITS & _KEEP))
_UPPER = _class_body(_ranges_of(_UPPERS & _KEEP))

# ---- PTBLexer.flex (CoreNLP v3.4.1) macros, as Python regex text.  %caseless: literals outside character classes
# match either case (written (?i:...)); character classes stay case-sensitive, as in JFlex.
SPLET = r"&[aeiouAEIOU](?i:acute|grave|uml);"
# LETTER's extra code points beyond [:letter:] (soft hyphen, combining marks, ...), PTBLexer.flex LETTER.
_LETTER_EXTRA = ("\u00ad\u0237-\u024f\u02c2-\u02c5\u02d2-\u02df\u02e5-\u02ff\u0300-\u036f\u0370-\u037d\u0384\u0385"
                 "\u03cf\u03f6\u03fc-\u03ff\u0483-\u0487\u04cf\u04f6-\u04ff\u0510-\u0525\u055a-\u055f\u0591-\u05bd"
                 "\u05bf\u05c1\u05c2\u05c4\u05c5\u05c7\u0615-\u061a\u063b-\u063f\u064b-\u065e\u0670\u06d6-\u06ef"
                 "\u06fa-\u06ff\u070f\u0711\u0730-\u074f\u0750-\u077f\u07a6-\u07b1\u07ca-\u07f5\u07fa\u0900-\u0903"
                 "\u093c\u093e-\u094e\u0951-\u0955\u0962-\u0963\u0981-\u0983\u09bc-\u09c4\u09c7\u09c8\u09cb-\u09cd"
                 "\u09d7\u09e2\u09e3\u0a01-\u0a03\u0a3c\u0a3e-\u0a4f\u0a81-\u0a83\u0abc-\u0acf\u0b82\u0bbe-\u0bc2"
                 "\u0bc6-\u0bc8\u0bca-\u0bcd\u0c01-\u0c03\u0c3e-\u0c56\u0d3e-\u0d44\u0d46-\u0d48\u0e30-\u0e3a"
                 "\u0e47-\u0e4e\u0eb1-\u0ebc\u0ec8-\u0ecd")
DIGIT = f"[{_DIG}\u07c0-\u07c9]"
LETTER = f"(?:[{_LET}{_LETTER_EXTRA}]|{SPLET})"
LETDIG = f"(?:[{_LET}{_LETTER_EXTRA}{_DIG}\u07c0-\u07c9]|{SPLET})"
JLETTER = f"[{_LET}]"  # bare [:letter:]
JLETDIG = f"[{_LET}{_DIG}]"  # [:letter:]|[:digit:]
SPACE = "[ \t\u00a0\u2000-\u200a\u3000]"
NEWLINE = "(?:\r\n|[\r\n\u2028\u2029\u000b\u000c\u0085])"
# The characters besides '\n' that make the jar emit an extra output line (the OUTPUT SHIFT above; U+0085 does not:
# the lexer reads it as an ellipsis before it can end a line).
SHIFTING_BREAKS = "\r\u000b\u000c\u2028\u2029"
SPACENL = "(?:\r\n|[ \t\u00a0\u2000-\u200a\u3000\r\n\u2028\u2029\u000b\u000c\u0085])"
SGML = (r"<(?:[!?][A-Za-z\-][^>\r\n]*|[A-Za-z][A-Za-z0-9_:.\-]*(?:[ ]+(?:[A-Za-z][A-Za-z0-9_:.\-]*[ ]*=[ ]*"
        r"""(?:'[^']*'|"[^"]*")|[A-Za-z][A-Za-z0-9_:.\-]*))*[ ]*/?|/[A-Za-z][A-Za-z0-9_:.\-]*)[ ]*>""")
SENTEND = f"{SPACENL}(?:{SPACENL}|[{_UPPER}]|{SGML})"
NUM = f"{DIGIT}*(?:[.:,\u00ad\u066b\u066c]{DIGIT}+)+|{DIGIT}+"
WORD = f"{LETTER}{LETDIG}*(?:[.!?]{LETTER}{LETDIG}*)*"
APOS = "(?:['\u0092\u2019]|&(?i:apos);)"
APOSETC = "(?:['\u0092\u2019`\u0091\u2018\u201b]|&(?i:apos);)"
HYPHEN = "[\\-_\u058a\u2010\u2011]"
THING = (f"(?:[dDoOlL]{APOSETC}{JLETDIG})?{JLETDIG}+"
         f"(?:{HYPHEN}(?:[dDoOlL]{APOSETC}{JLETDIG})?{JLETDIG}+)*")
THINGA = r"[A-Z]+(?:(?:&(?i:amp);|[+&])[A-Z]+)+"
ACRO_NAMED = r"(?i:(?:Canada|Sino|Korean|EU|Japan|non)-U\.S|U\.S\.-(?:U\.S\.S\.R|U\.K))"
ACRO = rf"(?:{ACRO_NAMED}|[A-Za-z](?:\.[A-Za-z])*)"
ACRO2 = rf"(?:{ACRO_NAMED}|[A-Za-z](?:\.[A-Za-z])+)"
HTHING = rf"[A-Za-z0-9][A-Za-z0-9.,\u00ad]*(?:-(?:{ACRO2}\.|[A-Za-z0-9\u00ad]+))+"
REDAUX = f"{APOS}(?:[msdMSD]|(?i:re|ve|ll))"
SWORD = "[A-Za-z\u00ad]*[A-MO-Za-mo-z]\u00ad*"
SREDAUX = f"[nN]{APOSETC}[tT]"
FILENAME_EXT = "|".join(sorted(
    "bat bmp c class cgi cpp dll doc docx exe gif gz h htm html jar java jpeg jpg mov mp3 pdf php pl png ppt ps py "
    "sql tar txt wav x xml zip".split(), key=len, reverse=True))
FILENAME = f"{LETDIG}+(?:\\.{LETDIG}+)*\\.(?i:{FILENAME_EXT})"
ABMONTH = "Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec"
ABDAYS = "Mon|Tues|Tue|Wed|Thurs|Thu|Fri"
ABSTATE = ("(?i:Ala|Ariz)|A(?i:z)|A(?i:rk)|(?i:Calif|Colo|Conn|Ct|Dak)|D(?i:el)|(?i:Fla|Ga)|I(?i:ll)|"
           "(?i:Ind|Kans?|Ky)|L(?i:a)|M(?i:ass)|(?i:Md|Mich|Minn)|M(?i:iss)|(?i:Mo|Mont|Neb|Nev|Okla)|O(?i:re)|"
           "P(?i:a)|(?i:Penn|Tenn)|T(?i:ex)|(?i:Va|Vt)|W(?i:ash)|(?i:Wisc?|Wyo)")
ABCOMP = "(?i:Inc|Cos?|Corp)|(?i:Pp?t)[ye](?i:s)?|(?i:Ltd|Plc|Rt|Bancorp|Bhd|Assn|Univ|Intl|Sys)"
ABBREV1 = (f"(?:(?i:{ABMONTH}|{ABDAYS})|{ABSTATE}|{ABCOMP}|(?i:tel|est|ext|sq)"
           r"|(?i:Jr|Sr|Bros|(?:Ed|Ph)\.D|Blvd|Rd|Esq)|(?i:etc|al|seq|Bldg))\.")
ABTITLE = ("(?i:Mr|Mrs|Ms)|M(?i:iss)|(?i:Drs?|Profs?|Sens?|Reps?|Attys?|Lt|Col|Gen|Messrs|Govs?|Adm|Rev|Maj|Sgt|"
           "Cpl|Pvt|Capt|Ste?|Ave|Pres|Lieut|Hon|Brig|Co?mdr|Pfc|Spc|Supts?|Det|Mt|Ft|Adj|Adv|Asst|Assoc|Ens|Insp|"
           "Mlle|Mme|Msgr|Sfc)")
ABBREV4 = rf"(?:{ABTITLE}|(?i:vs|Alex|Wm|Jos|Cie|a\.k\.a|cf|TREAS|Ph)|{ACRO}|(?i:Invt|Elec|Natl|M[ft]g|Dept))"
ACRONYM_NEXT = ("(?:A(?i:bout|ccording|dditionally|fter|n|s|t)|A|B(?i:ut)|E(?i:arlier)|H(?i:e|er|ere|owever)|"
                "I(?i:f|n|t)|L(?i:ast)|M(?i:any|ore|r\\.|s\\.)|N(?i:ow)|O(?i:nce|ne|ther|ur)|"
                "S(?i:he|ince|o|ome|uch)|T(?i:hat|he|heir|hen|here|hese|hey|his)|W(?i:e|hen|hile|hat)|"
                f"Y(?i:et|ou)|{SGML})")
MISCSYMBOL = ("[+%&~^|\\\\\u00a6\u00a7\u00a8\u00a9\u00ac\u00ae\u00af\u00b0-\u00b3\u00b4-\u00ba\u00d7\u00f7"
              "\u0387\u05be\u05c0\u05c3\u05c6\u05f3\u05f4\u0600-\u0603\u0606-\u060a\u060c\u0614\u061b\u061e"
              "\u066a\u066d\u0703-\u070d\u07f6\u07f7\u07f8\u0964\u0965\u0e4f\u1fbd\u2016\u2017\u2020-\u2023"
              "\u2030-\u2038\u203b\u203e-\u2042\u2044\u207a-\u207f\u208a-\u208e\u2100-\u214f\u2190-\u21ff"
              "\u2200-\u2bff\u3012\u30fb\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65]")
NOT_URL = " \t\n\f\r\"<>|(){}"
INSENTP = "[,;:\u3001]"
ASIAN = "\\-\\^x=~<>'"

# ---- The rules, in PTBLexer.flex order (the index breaks ties between equally long matches).  A top-level
# alternation is split into several entries with the same index (each alternative's longest match competes).
# Entry: (pattern, action, trailing context, longest_of).  With trailing context the pattern's group "t" is the
# token and the whole match counts for the longest-match rule.  longest_of=N: the rule is bounded (N chars at
# most) and its longest match is searched for (Python's first match can be shorter).
_RULES_SPEC: list[list[tuple]] = [
    [(r"(?i:c)\+\+", "plain")],
    [(r"(?i:c|f)#", "plain")],
    [(r"(?i:cannot)", "push3")],
    [(r"'(?i:twas)", "push3")],
    [(r"'(?i:tis)", "push2")],
    [(r"(?i:gonna|gotta|lemme|gimme|wanna)", "push2")],
    [(SGML, "nbsp")],
    [(r"&(?i:mdash|ndash|MD);|[\u0096\u0097\u2013\u2014\u2015]", "dash")],
    [(r"&(?i:amp);", "amp")],
    [(r"&(?:(?i:HT|TL|UR|LR|QC|QL|QR|odq|cdq)|#[0-9]+);", "plain")],
    [(f"(?P<t>{WORD}){REDAUX}", "soft", True)],
    [(f"(?P<t>{SWORD}){SREDAUX}", "soft", True)],
    [(WORD, "soft")],
    [(f"{APOS}[nN](?:{APOS})?", "plain"), (f"[lLdDjJ]{APOS}", "plain"), (f"(?i:Dunkin){APOS}", "plain"),
     (f"(?i:somethin){APOS}", "plain"), (f"(?i:ol){APOS}", "plain"), (f"{APOS}(?i:em)", "plain"),
     (f"[A-HJ-XZn]{APOSETC}{JLETTER}{{2,}}", "plain"), (f"{APOS}[2-9]0(?i:s)", "plain"),
     (f"{APOS}(?i:till?)", "plain"), (f"{JLETTER}+[aeiouyAEIOUY]{APOSETC}[aeiouA-Z]{JLETTER}*", "plain"),
     (f"{APOS}(?i:cause)", "plain"), (r"(?i:cont)'(?i:d)\.?", "plain"),
     (r"'(?i:twas)|(?i:nor)'(?i:easter)|(?i:c)'(?i:mon)|(?i:e)'(?i:er)|(?i:s)'(?i:mores)|(?i:ev)'(?i:ry)"
      r"|(?i:li)'(?i:l)|(?i:nat)'(?i:l)", "plain"), (f"(?i:O){APOSETC}(?i:o)", "plain")],
    [(f"(?P<t>[yY]{APOS}){JLETTER}", "plain", True)],
    [(f"(?i:https?)://[^{NOT_URL}]+[^{NOT_URL}.!?,\\-]", "plain")],
    [(f"(?i:www)\\.(?:[^{NOT_URL}.!?,]+\\.)+[a-zA-Z]{{2,4}}(?:/[^{NOT_URL}]+[^{NOT_URL}.!?,\\-])?", "plain"),
     (f"(?:[^{NOT_URL}`'.!?,-_$]+\\.)+(?i:com|net|org|edu)(?:/[^{NOT_URL}]+[^{NOT_URL}.!?,\\-])?", "plain")],
    [("(?:&(?i:lt);|<)?[a-zA-Z0-9][^ \t\n\f\r\"<>|()\u00a0{}]*@(?:[^ \t\n\f\r\"<>|(){}.\u00a0]+\\.)*"
      "[^ \t\n\f\r\"<>|(){}.\u00a0]+(?:&(?i:gt);|>)?", "plain")],
    [(r"@[a-zA-Z_][a-zA-Z_0-9]*", "plain"), (f"#{LETTER}+", "plain")],
    [(f"(?P<t>{REDAUX})[^A-Za-z]", "right", True)],
    [(f"(?P<t>{SREDAUX})[^A-Za-z]", "right", True)],
    [(f"{DIGIT}{{1,2}}[\\-/]{DIGIT}{{1,2}}[\\-/]{DIGIT}{{2,4}}", "plain", False, 10)],
    [(f"[\\-+]?(?:{NUM})", "soft")],
    [("[\u207a\u207b\u208a\u208b]?(?:[\u2070\u00b9\u00b2\u00b3\u2074-\u2079]+|[\u2080-\u2089]+)", "plain")],
    [(f"(?:{DIGIT}{{1,4}}[\\- \u00a0])?{DIGIT}{{1,4}}(?:\\\\?/|\u2044){DIGIT}{{1,4}}", "nbsp", False, 15)],
    [("[\u00bc\u00bd\u00be\u2153-\u215e]", "frac2")],
    [(r"-(?i:RRB|LRB|RCB|LCB|RSB|LSB)-", "amp"), (r"(?i:C\.D\.s)", "amp"), (r"(?i:pro)-", "amp"),
     (r"(?i:anti)-", "amp"), (r"(?i:S)(?:&(?i:amp);|&)(?i:P-500)", "amp"), (r"(?i:S)(?:&(?i:amp);|&)(?i:Ls)", "amp"),
     (f"(?i:Cap){APOS}(?i:n)", "amp"), (f"(?i:c){APOS}(?i:est)", "amp")],
    [(r"[A-Za-z0-9]+(?:-[A-Za-z]+){0,2}(?:\\?/[A-Za-z0-9]+(?:-[A-Za-z]+){0,2}){1,2}", "plain")],
    [(r"[A-Z]*\$|#", "plain")],
    [("[\u00a2\u00a3\u00a4\u00a5\u0080\u20a0\u20ac\u060b\u0e3f\u20a4\uffe0\uffe1\uffe5\uffe6]", "currency")],
    [(f"(?P<t>{ACRO}\\.){SPACENL}+{ACRONYM_NEXT}{SPACENL}", "acronym", True)],
    [(f"(?P<t>(?i:ca|figs?|prop|nos?|art|bldg|pp|op)\\.){SPACENL}?[{_DIG}]", "plain", True)],
    [(f"(?P<t>(?:(?i:pt)[eyEY]|(?i:co))\\.){SPACE}(?i:ltd|lim)", "plain", True)],
    [(f"(?P<t>{ABBREV1}){SENTEND}", "again", True)],
    [(f"(?P<t>{ABBREV1})(?s:..)", "plain", True)],
    [(ABBREV1, "again")],
    [(f"{ABBREV4}\\.", "plain")],
    [(f"(?P<t>{ABBREV4}){SPACE}", "plain", True)],
    [(f"(?P<t>{ACRO}){SPACENL}", "plain", True)],
    [(f"(?P<t>{APOS}[0-9][0-9]){SPACENL}", "plain", True)],
    [(f"(?P<t>{FILENAME})(?:{SPACENL}|[.?!,])", "plain", True)],
    [(f"(?P<t>{WORD}\\.){INSENTP}", "soft", True)],
    [("(?:\\([0-9]{2,3}\\)[ \u00a0]?|(?:\\+\\+?)?(?:[0-9]{2,4}[\\- \u00a0])?[0-9]{2,4}[\\- \u00a0])"
      "[0-9]{3,4}[\\- \u00a0]?[0-9]{3,5}", "phone", False, 26),
     (r"(?:(?:\+\+?)?[0-9]{2,4}\.)?[0-9]{2,4}\.[0-9]{3,4}\.[0-9]{3,5}", "phone", False, 20)],
    [("(?P<t>\"|&(?i:quot);)[A-Za-z0-9$]", "left", True)],
    [("\"|&(?i:quot);", "right")],
    [("\u007f", "skip")],
    [("<|&(?i:lt);", "lt")],
    [(">|&(?i:gt);", "gt")],
    [(r"(?P<t>[<>]?[:;=][\-o*']?[()DPdpO\\{@|\[\]])[^A-Za-z0-9]", "parens", True)],
    [(r"[\^x=~<>]\.\[\^(?i:x)=~<>\]", "parens"), (f"[{ASIAN}]_[{ASIAN}]", "parens"),
     (f"\\([{ASIAN}][_.]?[{ASIAN}]\\)", "parens"), (r"\([\^x=~<>']-[\^x=~<>'`]\)", "parens")],
    [(r"\{", "-LCB-")],
    [(r"\}", "-RCB-")],
    [(r"\[", "-LSB-")],
    [(r"\]", "-RSB-")],
    [(r"\(", "-LRB-")],
    [(r"\)", "-RRB-")],
    [(r"-+", "hyphens")],
    [(r"\.{3,5}", "ellipsis"), ("(?:\\.[ \u00a0]){2,4}\\.", "ellipsis"), ("[\u0085\u2026]", "ellipsis")],
    [(r"@+", "plain"), (r"#+", "plain"), (r"_+", "plain")],
    [(r"\*+", "plain"), (r"(?:\\\*){1,3}", "plain")],
    [(INSENTP, "plain")],
    [(r"[?!]+", "plain")],
    [("[.\u00a1\u00bf\u037e\u0589\u061f\u06d4\u0700-\u0702\u07fa\u3002]", "plain")],
    [("=", "plain")],
    [("/", "plain")],
    [(f"(?P<t>{HTHING}\\.){INSENTP}", "soft", True)],
    [(HTHING, "soft")],
    [(f"(?P<t>{THING}\\.){INSENTP}", "plain", True)],
    [(THING, "plain")],
    [(f"(?P<t>{THINGA}\\.){INSENTP}", "amp", True)],
    [(THINGA, "amp")],
    [("(?P<t>')[A-Za-z][^ \t\n\r\u00a0]", "left", True)],
    [(REDAUX, "right")],
    [(SREDAUX, "right")],
    [(APOS, "right"), ("''", "right"),
     ("[`\u2018\u2019\u201a\u201b\u201c\u201d\u0091\u0092\u0093\u0094\u201e\u201f\u2039\u203a\u00ab\u00bb]{1,2}",
      "right")],
    [("<<|>>", "plain")],
    [(MISCSYMBOL, "plain")],
    [("\u0000|[ \t\u00a0\u2000-\u200a\u3000]+|[\u200b\u200e\u200f\ufeff]", "skip")],
    [(NEWLINE, "newline")],
    [(r"&(?i:nbsp);", "skip")],
    [(".", "skip")],  # untokenizable (PTBLexer option untokenizable=firstDelete): deleted, warned once on stderr
]


class _Rule:
    __slots__ = ("index", "regex", "action", "context", "longest_of")

    def __init__(self, index: int, pattern: str, action: str, context: bool = False, longest_of: int = 0):
        self.index, self.action, self.context, self.longest_of = index, action, context, longest_of
        self.regex = re.compile(pattern)


_RULES = [_Rule(index, *entry) for index, entries in enumerate(_RULES_SPEC) for entry in entries]

# Which rules can start at a character (a superset is harmless, a subset would be a bug): the first character
# of each rule's pattern, by rule index.
_L = f"[{_LET}{_LETTER_EXTRA}&]"  # a LETTER can start with '&' (SPLET)
_D = f"[{_DIG}\u07c0-\u07c9]"
_Q = "['\u0092\u2019&`\u0091\u2018\u201b]"
# Non-ASCII letters that a caseless ASCII literal matches (in JFlex and in Python's re): long s, dotted and dotless
# i, Kelvin sign.
_CASELESS = "\u017f\u0130\u0131\u212a"
_LIT = "[A-Za-z" + _CASELESS + "]"  # a rule opening with a caseless literal word (or ACRO)
_STARTERS = {
    0: _LIT, 1: _LIT, 2: _LIT, 3: "'", 4: "'", 5: _LIT, 6: "<", 7: "[&\u0096\u0097\u2013\u2014\u2015]", 8: "&", 9: "&",
    10: _L, 11: "[A-Za-z\u00ad]", 12: _L, 14: "[yY]", 15: "[hH]", 17: "[&<a-zA-Z0-9]", 18: "[@#]", 19: _Q,
    20: "[nN]", 21: _D, 22: f"[\\-+.:,\u00ad\u066b\u066c]|{_D}",
    23: "[\u207a\u207b\u208a\u208b\u2070\u00b9\u00b2\u00b3\u2074-\u2079\u2080-\u2089]", 24: _D,
    25: "[\u00bc\u00bd\u00be\u2153-\u215e]", 26: "-|" + _LIT, 27: "[A-Za-z0-9]", 28: "[A-Z$#]", 30: _LIT,
    31: _LIT, 32: _LIT, 33: _LIT, 34: _LIT, 35: _LIT, 36: _LIT, 37: _LIT, 38: _LIT, 39: _Q, 40: _L + "|" + _D,
    41: _L, 42: "[(+0-9]", 43: '["&]', 44: '["&]', 45: "\u007f", 46: "[<&]", 47: "[>&]", 48: "[<>:;=]",
    49: "[-^x=~<>'(]", 50: "[{]", 51: "[}]", 52: "\\[", 53: "\\]", 54: "[(]", 55: "[)]", 56: "-",
    57: "[.\u0085\u2026]", 58: "[@#_]", 59: "[*\\\\]", 60: INSENTP, 61: "[?!]",
    62: "[.\u00a1\u00bf\u037e\u0589\u061f\u06d4\u0700-\u0702\u07fa\u3002]", 63: "=", 64: "/",
    65: "[A-Za-z0-9]", 66: "[A-Za-z0-9]", 67: f"[{_LET}{_DIG}]", 68: f"[{_LET}{_DIG}]", 69: "[A-Z]", 70: "[A-Z]",
    71: "'", 72: _Q, 73: "[nN]", 74: _Q + "|[\u201a\u201c\u201d\u0093\u0094\u201e\u201f\u2039\u203a\u00ab\u00bb]",
    75: "[<>]", 76: MISCSYMBOL, 77: "[\u0000 \t\u00a0\u2000-\u200b\u3000\u200e\u200f\ufeff]",
    78: "[\r\n\u2028\u2029\u000b\u000c\u0085]", 79: "&",
}  # absent (13 APOWORD, 16 LIKELYURL, 29 DOLSIGN2, 80 untokenizable): tried at every character
_STARTER_REGEXES = {index: re.compile(pattern) for index, pattern in _STARTERS.items()}



@lru_cache(maxsize=4096)
def _candidates(ch: str) -> tuple[_Rule, ...]:
    return tuple(rule for rule in _RULES
                 if rule.index not in _STARTER_REGEXES or _STARTER_REGEXES[rule.index].match(ch) is not None)


# Fast paths for the common cases, each taken only where no other rule can match (longer or differently): a run
# of ASCII letters before a blank, a newline, the end, or one of . , ; : that is itself followed by one of those
# (not a word+period that some abbreviation rule takes: checked with _ABBREVIATION; "cannot", "gonna", ... are
# split by their own rules), a run of blanks (skipped as one match, so "\u00a0.com" after a blank is no URL), and
# . , ; : before a blank, newline or the end (". ." may start an ellipsis).
_FAST_WORD = re.compile(r"[A-Za-z]+(?=[ \t\n]|\Z|[.,;:](?:[ \t\n]|\Z))")
_FAST_BLANKS = re.compile(SPACE + "+")  # the whole run: SPACES is one skipped match
_ASSIMILATIONS = frozenset(["cannot", "gonna", "gotta", "lemme", "gimme", "wanna"])
_ABBREVIATION = re.compile(f"{ABBREV1}|{ABBREV4}\\.|(?i:ca|figs?|prop|nos?|art|bldg|pp|op)\\."
                           "|(?:(?i:pt)[eyEY]|(?i:co))\\.")


@lru_cache(maxsize=65536)
def _is_abbreviation(word_and_period: str) -> bool:
    return _ABBREVIATION.fullmatch(word_and_period) is not None


_AMP = re.compile(r"(?i:&amp;)")
_FRACTIONS = str.maketrans({"\u00bc": "1/4", "\u00bd": "1/2", "\u00be": "3/4", "\u2153": "1/3", "\u2154": "2/3"})
_CURRENCY = str.maketrans({"\u00a2": "cents", "\u00a3": "#", "\u0080": "$", "\u00a4": "$", "\u20a0": "$",
                           "\u20ac": "$"})
# CoreNLP 3.4.1 PTBLexer.latexQuotes: ASCII quotes by guessed side, then the curly/CP1252 ones by their side.
_CURLY_QUOTES = str.maketrans({"\u0091": "`", "\u2018": "`", "\u201b": "`", "\u2039": "`",
                               "\u0092": "'", "\u2019": "'", "\u203a": "'",
                               "\u0093": "``", "\u201c": "``", "\u00ab": "``",
                               "\u0094": "''", "\u201d": "''", "\u00bb": "''"})


def _latex_quotes(text: str, left: bool) -> str:
    single, double = ("`", "``") if left else ("'", "''")
    text = text.replace("&apos;", single).replace("'", single).replace('"', double).replace("&quot;", double)
    return text.translate(_CURLY_QUOTES)


def _remove_soft_hyphens(text: str) -> str:
    if "\u00ad" not in text:
        return text
    return text.replace("\u00ad", "") or "-"


def _lex_lines(original: str) -> list[str]:
    """The Java tool's output for ``original`` split into lines: tokens joined by ' ', a newline token ends a line."""
    text = original if original.isascii() else original.translate(_SHADOW)
    lines: list[str] = []
    tokens: list[str] = []
    pos, end = 0, len(text)
    while pos < end:
        ch = text[pos]
        if ch == " " or ch == "\t":
            pos = _FAST_BLANKS.match(text, pos).end()
            continue
        if ch == "\n":
            lines.append(" ".join(tokens))
            tokens = []
            pos += 1
            continue
        if ch < "\x80" and ch.isalpha():
            fast = _FAST_WORD.match(text, pos)
            if fast is not None:
                word, stop = fast.group(), fast.end()
                if word.lower() not in _ASSIMILATIONS and (
                        stop == end or text[stop] != "." or not _is_abbreviation(word + ".")):
                    tokens.append(word)  # ASCII: the same in the original
                    pos = stop
                    continue
        elif ch in ".,;:":
            after = text[pos + 1:pos + 3]
            if after == "" or after[0] in "\t\n" or (after[0] == " " and (ch != "." or after[1:] != ".")):
                tokens.append(ch)
                pos += 1
                continue
        best, best_len, best_match = None, 0, None
        for rule in _candidates(ch):
            match = rule.regex.match(text, pos)
            if match is None:
                continue
            length = match.end() - pos
            if rule.longest_of:
                for stop in range(min(end, pos + rule.longest_of), match.end(), -1):
                    longer = rule.regex.fullmatch(text, pos, stop)
                    if longer is not None:
                        match, length = longer, stop - pos
                        break
            if length > best_len:
                best, best_len, best_match = rule, length, match
        token_end = best_match.end("t") if best.context else best_match.end()
        token = original[pos:token_end]
        action = best.action
        pos = token_end
        if action == "plain":
            tokens.append(token)
        elif action == "soft":
            tokens.append(_remove_soft_hyphens(token))
        elif action == "skip":
            pass
        elif action == "newline":
            lines.append(" ".join(tokens))
            tokens = []
        elif action == "right" or action == "left":
            tokens.append(_latex_quotes(token, action == "left"))
        elif action == "again":  # ABBREV1: the token keeps its period and the period is read again
            tokens.append(token)
            pos -= 1
        elif action == "acronym":
            if len(token) == 2:  # "I." and the like: the letter, then the period
                tokens.append(token[0])
            else:
                tokens.append(token)
            pos -= 1
        elif action == "push3" or action == "push2":
            back = 3 if action == "push3" else 2
            tokens.append(token[:-back])
            pos -= back
        elif action == "amp":
            tokens.append(_AMP.sub("&", token))
        elif action == "nbsp":
            tokens.append(token.replace(" ", "\u00a0"))
        elif action == "dash":
            tokens.append("--")
        elif action == "hyphens":
            tokens.append("--" if 3 <= len(token) <= 4 else token)
        elif action == "ellipsis":
            tokens.append("...")
        elif action == "parens":
            tokens.append(token.replace("(", "-LRB-").replace(")", "-RRB-"))
        elif action == "phone":
            tokens.append(token.replace(" ", "\u00a0").replace("(", "-LRB-").replace(")", "-RRB-"))
        elif action == "frac2":
            tokens.append(token.translate(_FRACTIONS))
        elif action == "currency":
            tokens.append(token.translate(_CURRENCY))
        elif action == "lt":
            tokens.append("<")
        elif action == "gt":
            tokens.append(">")
        else:  # a bracket: its PTB name
            tokens.append(action)
    lines.append(" ".join(tokens))
    return lines


def _clean(line: str) -> str:
    """pycocoevalcap's per-line step: lower-cased by the jar, split on ' ', PUNCTUATIONS dropped."""
    return " ".join(word for word in line.lower().rstrip().split(" ") if word not in PUNCTUATIONS)


def tokenize_all(texts: Iterable[str]) -> list[str]:
    """pycocoevalcap's ``PTBTokenizer().tokenize`` output for ``texts`` as one call, in order (see the quirks above).

    A caption with a non-'\\n' newline character shifts every later caption's result, as in pycocoevalcap.
    """
    texts = list(texts)
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise InputError(f"ptb: text #{index} is {type(text).__name__}, not str; pass report texts as strings")
    if not texts:
        return []
    # Every joining '\n' reaches the output (as a newline token, or inside a token such as an SGML tag with a quoted
    # attribute, which the jar writes as it is), so there are at least as many lines as texts.
    lines = "\n".join(_lex_lines("\n".join(text.replace("\n", " ") for text in texts))).split("\n")
    return [_clean(line) for line in lines[:len(texts)]]


def tokenize(text: str) -> str:
    """pycocoevalcap's PTB tokenisation of one text given alone: space-joined lower-case tokens, punctuation dropped."""
    return tokenize_all([text])[0]


if __name__ == "__main__":  # python -m rexrank.metrics.ptb < file: one text per line, like the jar
    for result in tokenize_all(sys.stdin.read().split("\n")):
        print(result)
