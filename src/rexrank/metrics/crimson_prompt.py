"""CRIMSON's prompt, its score formula and the two readers of a judge's answer (crimson-score 0.2.2's, radeval 2.2.1's).

Interface facts of the fine-tuned judge (read from crimson-score 0.2.2's ``CRIMSON/prompt_parts.py``,
``generate_score.py`` and ``utils.py``, and from radeval 2.2.1's copy of them in ``radeval/metrics/crimson/``; our own
code): the prompt's sections, word for word, and the order ``build_prompt`` joins them in; the system message; the
CRIMSON score of a judge object (``score_evaluation``). Both packages have the same prompt and formula; they read the
judge's text differently:

- ``evaluate_output`` (the board's ``crimson``, as crimson-score's ``evaluate_batch``): the text as it is, through
  the judge-mistake repairs (``repaired_json``); no extraction of fenced or surrounded JSON, no trailing-comma
  removal, no closing of a cut-off answer; an attribute error or a matched pair without ``ref_id`` makes the answer
  unreadable (crimson-score indexes ``["ref_id"]``). One deviation, counted: crimson-score scores an answer that
  lacks any of the four top-level keys (``{}`` scores 1.0: no findings, no errors) as if the key held nothing;
  rexrank scores it NaN, as unreadable, and marks it (``deviation``; ``n_deviations``).
- ``evaluate_output_radeval`` (``crimson_radeval``, as radeval's ``_parse_response``): extraction (the first fenced
  block, else first "{" to last "}"), trailing commas removed, the same repairs, a cut-off object closed; the four
  keys required; attribute errors without ``ref_id`` skipped.

tests/test_crimson.py checks every one of them against both packages' own functions.

Two quirks kept on purpose, because the judge was trained and both packages run with them: the output-format and
matching sections contain doubled braces (``{{``, ``}}``; the strings are written for ``str.format`` but never
formatted), and the error-categories section has a space at the end of its location line.

A judge's output is hostile text: parsing never raises and never runs anything; whatever cannot be read (no JSON, a
missing key, a value of the wrong type) gives a NaN score with the reason in ``parse_error``.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

SYSTEM_MESSAGE = "You are an expert radiology evaluator that assesses the accuracy of radiology reports."


def _lines(*lines: str) -> str:
    return "\n".join(lines)


# --- the prompt's sections (crimson-score CRIMSON/prompt_parts.py = radeval's copy), in build_prompt's order ------

OBJECTIVE = _lines(
    'Objective:',
    '',
    'Evaluate the accuracy of predicted chest X-ray (CXR) findings compared to reference (ground truth) findings.',
    'Only evaluate positive findings, not normal findings. Focus on clinical accuracy.',
)

TASK_STEPS = _lines(
    'Task:',
    'Perform this evaluation in TWO STEPS:',
    '',
    'STEP 1: Extract All Positive Findings',
    'For BOTH reference and predicted reports, identify each ABNORMAL/POSITIVE finding exactly as written, including all descriptors, locations, severity terms, and measurements. List each finding as it appears in the original text.',
    'If a single sentence contains multiple distinct findings, split them into separate entries (e.g., "bilateral pleural effusions and bibasilar atelectasis" should be two findings: "bilateral pleural effusions" and "bibasilar atelectasis").',
    'When splitting, carry over shared qualifiers (certainty terms like "suggestive of", "consistent with", "suspicious for", as well as shared descriptors like location or severity) to EACH resulting finding so no context is lost.',
    'For each finding (both reference and predicted), assign a clinical_significance level.',
    'Assign each reference finding a sequential ID starting with "R" (R1, R2, R3, ...) and each predicted finding a sequential ID starting with "P" (P1, P2, P3, ...).',
    '',
    'IMPORTANT: Include all abnormal findings in the reference_findings and predicted_findings lists (not just clinically significant ones). Do not include normal findings.',
    '',
    'STEP 2: Compare and Classify Errors',
    'Using the assigned IDs, match findings between reference and predicted, then identify errors in these 3 categories.',
)

CLINICAL_SIGNIFICANCE_LEVELS = _lines(
    'Clinical significance levels (used for findings):',
    '    - "urgent": Requires immediate action / life-threatening',
    '    - "actionable_not_urgent": Would change treatment plan but not immediately critical',
    '    - "not_actionable_not_urgent": Minor discrepancy with minimal clinical impact (but still worth noting)',
    '    - "benign_expected": Benign/expected finding with no clinical relevance (age-related changes)',
)

SIGNIFICANCE_EXAMPLES = _lines(
    'Examples of typical classifications (use guidelines and clinical judgment for patient-specific context):',
    '',
    'Urgent findings (require immediate action):',
    '    - Pneumothorax (especially tension pneumothorax)',
    '    - Mediastinal widening ',
    '    - Pneumomediastinum',
    '    - Pneumoperitoneum',
    '    - Mediastinal shift',
    '    - Foreign Bodies ',
    '    - Large pericardial effusion / Cardiomegaly',
    '    - Malpositioned devices (e.g., endotracheal tube in right mainstem bronchus, misplaced central venous catheter, malpositioned chest tube)',
    '',
    'Actionable non-urgent findings (change treatment but not emergent):',
    '    - Moderate pleural effusion',
    '    - Pulmonary nodules requiring follow-up',
    '    - Pneumonia / Consolidation / Airspace disease or opacity / Infiltrates',
    '    - Pulmonary edema (prominent perihilar / bronchial / vascular markings)',
    '    - Mild to moderate cardiomegaly',
    '    - Small non-tension pneumothorax',
    '    - Masses',
    '    - Fractures',
    '    - Adenopathy',
    '',
    'Not actionable, not urgent findings (minor clinical discrepancy, but still documented):',
    '    - Stable chronic findings (old granulomas, chronic scarring)',
    '    - Atelectasis',
    '    - Trace pleural thickening / effusion ',
    '    - Osteopenia',
    '    - Appropriately positioned support devices and lines (NG tube, ETT, central lines, chest tubes in correct position) ',
    '',
    'Benign/expected findings (no clinical relevance, age-related changes):',
    '    - Age-appropriate atherosclerotic calcifications (e.g., aortic calcification in elderly)',
    '    - Age-appropriate vascular tortuosity',
    '    - Age-appropriate degenerative spine changes (in elderly patients)',
    '    - Incidental stable benign findings (healed rib fracture, granuloma mentioned as "unchanged")',
    '    - Expected physiologic findings (gastric air, bowel gas pattern)',
)

SIGNIFICANCE_APPLICATION = _lines(
    'Apply these significance levels as follows:',
    "- reference_findings and predicted_findings: classify each FINDING's clinical significance",
    '- missing_findings (b) and false_findings (a): Do NOT include clinical_significance.',
    '  Their weights are derived automatically from reference_findings and predicted_findings respectively.',
)

ATTRIBUTE_SEVERITY_LEVELS = _lines(
    'Attribute error severity (used ONLY for attribute_errors):',
    '    - "significant": The attribute difference affects treatment or could lead to mismanagement',
    '    - "negligible": The attribute difference is clinically insignificant and would not affect treatment',
)

ERROR_CATEGORIES = _lines(
    'Error categories:',
    '    a) False findings: Positive findings in predicted that are NOT present in reference',
    '    b) Missing findings: Positive findings in reference but MISSING from predicted',
    '    c) Attribute errors: Matched finding has incorrect or incomplete attributes including:',
    '        - Location/laterality: Errors in anatomical location or side specification (left vs right lung, different lobes). ',
    '        - Severity/extent: Errors in the degree or size characterization of the finding (small vs large, mild vs severe, minimal vs moderate)',
    '        - Morphological descriptors: Errors in the shape, appearance, or characteristics of the finding (well-defined vs irregular margins, solid vs ground-glass density)',
    '        - Measurements: Errors in quantitative size specifications (3 cm vs 1.5 cm for lesions, nodule diameter discrepancies)',
    '        - Certainty: Errors in the confidence level of the finding (definite finding vs "possible" or "suspicious for")',
    '        - Unspecific: Predicted finding is too vague or non-specific compared to the reference (reference says "pneumothorax" but predicted says "lucency")',
    '        - Overinterpretation: Predicted finding makes an unsupported diagnostic leap beyond the imaging finding (reference says "opacity" but predicted says "mass")',
    '        - Temporal/comparison: Errors in temporal descriptors or comparison with prior studies (missing "new", "worsening", "resolved", "stable", "unchanged")',
)

MATCHING_CRITERIA = _lines(
    'Matching criteria:',
    '- A finding matches if the core finding is present in both (e.g., "pleural effusion", "pneumothorax")',
    '- A finding still matches even if location differs (location mismatch is an attribute error, not a match failure)',
    '- One reference finding CAN match multiple predicted findings (one-to-many). For example, if R1 is "bilateral pleural effusions" and the predicted report splits it into P1 "left pleural effusion" and P2 "right pleural effusion", then both {{R1, P1}} and {{R1, P2}} are valid matches.',
    '- For matched findings, check all attributes (location, severity, descriptors, measurements, certainty, unspecific, overinterpretation, temporal)',
    '- If any attributes differ, add separate entries to attribute_errors for each distinct issue, referencing both the reference ID (ref_id) and predicted ID (pred_id)',
    '- Any reference finding whose ID does not appear in matched_findings MUST be in missing_findings',
    '- Any predicted finding whose ID does not appear in matched_findings MUST be in false_findings',
)

ATTRIBUTE_ERROR_INSTRUCTIONS = _lines(
    'For attribute_errors, also specify which error types apply from: ["location", "severity", "descriptor", "measurement", "certainty", "unspecific", "overinterpretation", "temporal"]',
    'For each attribute_error, provide the ref_id and pred_id of the matched pair, and a brief "explanation" describing what the discrepancy is.',
    '',
    'IMPORTANT: A matched finding pair can appear in attribute_errors MULTIPLE TIMES if it has multiple distinct issues.',
    'Each attribute error should be a separate entry with its own severity classification and explanation.',
    'For example, if a finding has both a location error and a severity error, create two separate entries with the same ref_id and pred_id.',
)

ATTRIBUTE_SEVERITY_GUIDELINES = _lines(
    'Specific guidelines for attribute error severity:',
    '',
    'Location/laterality errors:',
    '    - NOT an error: If the reference finding does not specify a location, the predicted report adding location detail is acceptable and should NOT be flagged as a location error.',
    '    - Significant: Wrong lung (left vs right), non-adjacent lobes (e.g., right upper lobe vs right lower lobe), non-adjacent zones (e.g., upper zone vs lower zone)',
    '    - Negligible: Adjacent/touching lobes (e.g., right upper vs right middle, right middle vs right lower, left upper vs left lower), adjacent zones (e.g., upper vs mid zone, mid vs lower zone), minor positional differences within the same lobe (e.g., "apical" vs "lateral")',
    '',
    'Severity/extent errors:',
    '    - Significant: Changes clinical urgency or management (e.g., "small" vs "large", "mild" vs "severe", "minimal" vs "moderate", "simple" vs "tension")',
    '    - Negligible: Stylistic differences that do not affect management (e.g., "small" vs "tiny")',
    '',
    'Morphological descriptor errors:',
    '    - Significant: Changes diagnostic considerations or management (e.g., "well-defined" vs "irregular margins", "solid" vs "ground-glass density", "simple" vs "complex")',
    '    - Negligible: Stylistic differences that do not affect interpretation (e.g., "opacity" vs "opacification", "density" vs "opacification")',
    '',
    'Measurement errors:',
    '    - For nodules (< 3 cm): Significant if difference exceeds margin of error (for nodules < 6mm use 2mm margin; for nodules ≥ 6mm use 4mm margin). Negligible if within margin (e.g., "4mm" vs "5mm", "8mm" vs "11mm").',
    '    - For masses (≥ 3 cm): Significant if difference exceeds 20% of the reference size. Negligible if within 20%. However, if the measurement error reclassifies a mass as a nodule (crossing below 3 cm), it is always significant regardless of percentage.',
    '',
    'Certainty errors:',
    '    - Significant: Adding or removing hedging language that changes management decisions (e.g., definite "pneumothorax" vs "possible pneumothorax" when clinical urgency would differ)',
    '    - Negligible: Minor differences in hedging that do not affect management (e.g., "likely" vs "probable", "suggestive of" vs "compatible with")',
    '',
    'Unspecific and Overinterpretation errors:',
    '    Unspecific means the candidate is vaguer than the reference, overinterpretation means the candidate is more specific/diagnostic than the reference.',
    '    - Significant: The specificity gap changes clinical management — either the vague term would not prompt the same workup, or the more specific term makes an unsupported diagnostic leap',
    '        - "pneumothorax" and "lucency"',
    '        - "pneumonia" and "opacity"',
    '        - "mass" or "tumor" or "malignancy" and "opacity"',
    '        - "pleural effusion" and "costophrenic angle blunting"',
    '        - "consolidation" and "pulmonary edema" or "hemorrhage"',
    '        - "lucency" and "pneumothorax" or "emphysema" or "cavitation"',
    '        - "ground-glass opacity" and "pulmonary hemorrhage" or "early ARDS"',
    '        - "nodule" and "granuloma" or "carcinoma"',
    '        - "mediastinal widening" and "aortic dissection" or "lymphoma" or "mediastinal mass"',
    '        - "pleural thickening" and "mesothelioma" or "empyema"',
    '    - Negligible: The terms are commonly accepted as interchangeable, describe the same pathophysiological process at a slightly different point on its spectrum, and management would not meaningfully change',
    '        - "consolidation" and "pneumonia"',
    '        - "infiltrate" and "pneumonia"',
    '        - "airspace opacity" and "airspace disease"',
    '    - Note: If the overinterpreted or unspecific finding is in the same location as the reference finding, treat it as a MATCH with an attribute error, NOT as a false finding',
    '',
    'Temporal/comparison errors:',
    '    - Significant: Missing or incorrect "new", "worsening", "increasing", "resolved", or falsely adding these when not indicated (changes clinical urgency)',
    '    - Negligible: Missing "stable", "unchanged", "chronic", "longstanding", or minor phrasing differences',
    '    - Note: Do not penalize absence of temporal descriptors if no prior study is referenced in either report',
)

CONTEXT_GUIDELINES = _lines(
    'Context guidelines:',
    '',
    'Age-appropriate findings:',
    '- Elderly patients (≥65): Expected degenerative changes such as aortic calcification, vascular tortuosity, degenerative spine changes, unfolding of the aorta, and sternal wire/median sternotomy findings (if chronic) should be classified under benign_expected — UNLESS the finding is directly related to the clinical indication.',
    '',
    'Indication-finding concordance:',
    "- A finding's clinical significance depends on whether it is EXPECTED given the indication and age, or UNEXPECTED and therefore more clinically important.",
    '- The SAME finding can be urgent, actionable, or incidental depending on the clinical context:',
    '    - Pleural effusion in a known heart failure patient with dyspnea: actionable_not_urgent (expected clinical course)',
    '    - Pleural effusion in a young patient with palpitations: actionable_not_urgent or urgent (unexpected, needs workup)',
    '    - Rib fractures in a young child with chest pain: urgent (concern for non-accidental injury)',
    '    - Rib fractures in an adult post-RTA: actionable_not_urgent (trauma workup, possible hemothorax)',
    '    - Rib fractures in an elderly patient with known old trauma: not_actionable_not_urgent or benign_expected (chronic/expected)',
    '- When the indication directly explains a finding (e.g., "known heart failure" + cardiomegaly), the finding may be less actionable than the same finding without a known cause.',
    '- When the indication does NOT explain a finding, it is generally more clinically significant and warrants higher classification.',
    '',
    'Post-procedural, post-surgical context, and expectation of complication:',
    '- If the indication references a recent procedure (line placement, intubation, chest tube insertion, post-CABG, post-thoracotomy), expected post-procedural findings should generally be classified as not_actionable_not_urgent:',
    '- When a complication is clinically anticipated or known to be a high-probability outcome, its presence carries lower urgency than the same complication appearing unexpectedly:',
    '    - Post-intubation aspiration (known risk): actionable_not_urgent even if new',
    '    - Pneumothorax after central line placement (known procedural risk): actionable_not_urgent if small and anticipated',
    '    - Mediastinal free air (Pneumomediastinum) after recent sternotomy or esophageal procedure: actionable_not_urgent if small and stable (expected post-surgical finding, but requires follow-up imaging)',
    '    - New pleural effusion after cardiac surgery (expected post-op reaction): not_actionable_not_urgent if small and stable',
    '- However, post-procedural COMPLICATIONS and UNEXPECTED findings remain at their usual or higher severity:',
    '    - Effusion in a young, otherwise healthy patient: actionable_not_urgent (unexpected, needs workup)',
    '    - Mediastinal widening without known prior dissection or trauma: urgent',
    '',
    'Pediatric considerations:',
    '- In young children, thymic shadow is normal and should not be classified as cardiomegaly or mediastinal widening.',
    '- Unexpected findings in children (fractures, effusions) without a clear traumatic mechanism should be weighted higher due to concern for non-accidental injury.',
    '- Lobar atelectasis in a young child may represent foreign body aspiration and should be classified as urgent, especially if clinical context suggests acute onset or no other explanation.',
    '- Pediatric cardiac and mediastinal silhouette norms differ from adults — use age-appropriate thresholds.',
    '',
    'Trauma context:',
    '- When the indication mentions trauma, fall, MVC/RTA, or assault, fractures and pneumothorax should be classified at least actionable_not_urgent.',
    '- Associated findings such as pleural effusion in trauma should raise concern for hemothorax (actionable_not_urgent or urgent depending on size).',
    '- In elderly patients with a history of old/remote trauma, stable chronic findings (healed fractures, old deformities) are not_actionable_not_urgent or benign_expected.',
    '',
)

OUTPUT_FORMAT = _lines(
    'Output Format:',
    'Return ONLY valid JSON (no markdown, no explanation) in this exact format:',
    '{{',
    '    "reference_findings": [',
    '        {{"id": "R1", "finding": "<finding text>", "clinical_significance": "urgent|actionable_not_urgent|not_actionable_not_urgent|benign_expected"}},',
    '        ...',
    '    ],',
    '    "predicted_findings": [',
    '        {{"id": "P1", "finding": "<finding text>", "clinical_significance": "urgent|actionable_not_urgent|not_actionable_not_urgent|benign_expected"}},',
    '        ...',
    '    ],',
    '    "matched_findings": [',
    '        {{"ref_id": "R1", "pred_id": "P1"}},',
    '        {{"ref_id": "R1", "pred_id": "P2"}},',
    '        ...',
    '    ],',
    '    "errors": {{',
    '        "false_findings": [',
    '            "P3",',
    '            ...',
    '        ],',
    '        "missing_findings": [',
    '            "R2",',
    '            ...',
    '        ],',
    '        "attribute_errors": [',
    '            {{"ref_id": "R1", "pred_id": "P1", "severity": "significant|negligible", "error_types": ["location|severity|descriptor|measurement|certainty|unspecific|overinterpretation|temporal"], "explanation": "<brief description of the discrepancy>"}},',
    '            ...',
    '        ]',
    '    }}',
    '}}',
)

IMPORTANT_NOTES = _lines(
    'IMPORTANT NOTES:',
    '- If a category has no items, use an empty array [].',
    '- A single reference finding ID (R1, R2, ...) may appear in multiple matched_findings pairs (one-to-many matching). Any reference ID that does not appear in ANY matched pair MUST be in missing_findings.',
    '- Every predicted finding ID (P1, P2, ...) must appear in EXACTLY ONE place: either in matched_findings or in false_findings.',
    '- A missing finding CANNOT also appear in attribute_errors. If a reference finding is completely absent from the predicted findings, its ID goes ONLY in missing_findings.',
    '- If a finding is classified as unspecific (in attribute_errors with "unspecific" error type), it is NOT a missing finding. Unspecific findings are PRESENT in the predicted report but too vague - they should appear in predicted_findings list and NOT in missing_findings.',
)


def build_prompt(reference: str, candidate: str, *, guidelines: bool, context: dict[str, Any] | None = None) -> str:
    """The CRIMSON prompt for one pair.

    guidelines: include the significance examples and the attribute-severity guidelines (radeval leaves them out
    for its default judge, which was trained without them, and includes them for every other model). context: the
    patient's context (e.g. {"Age": "82", "Indication": "..."}); its guideline section is added only with both.
    """
    context_block = ""
    if context:
        context_block = "Patient Context:\n" + "".join(f"    {key}: {value}\n" for key, value in context.items())
    sections = [OBJECTIVE, context_block, f"Reference Findings (Ground Truth):\n{reference}",
                f"Predicted Findings (Candidate):\n{candidate}", TASK_STEPS, CLINICAL_SIGNIFICANCE_LEVELS]
    if guidelines:
        sections.append(SIGNIFICANCE_EXAMPLES)
    sections += [SIGNIFICANCE_APPLICATION, ATTRIBUTE_SEVERITY_LEVELS, ERROR_CATEGORIES, MATCHING_CRITERIA,
                 ATTRIBUTE_ERROR_INSTRUCTIONS]
    if guidelines:
        sections.append(ATTRIBUTE_SEVERITY_GUIDELINES)
    if guidelines and context:
        sections.append(CONTEXT_GUIDELINES)
    sections += [OUTPUT_FORMAT, IMPORTANT_NOTES]
    return "\n\n".join(s for s in sections if s)  # an empty context block leaves no gap


def chat_messages(prompt: str) -> list[dict[str, str]]:
    """The conversation every CRIMSON backend sends: the system message, then the prompt."""
    return [{"role": "system", "content": SYSTEM_MESSAGE}, {"role": "user", "content": prompt}]


# --- reading a judge's output (crimson-score CRIMSON/utils.py, generate_score.py; radeval crimson.py, utils.py) -----

# Bump when a reader can read an answer differently (part of each metric's fingerprint).
PARSER_VERSION = "2"
RADEVAL_PARSER_VERSION = "1"
_FENCED = re.compile(r"```(?:json)?\s*\n?(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")
# Repairs tried on text that is not JSON as it stands, each for a mistake the fine-tuned judge is known to make.
_BAD_ESCAPE = re.compile(r'\\(?!["\\\//bfnrtu])')  # \_ or \L echoed from a report
_ORPHAN_AFTER_COMMA = re.compile(r',\s*"[^"]*"\s*(?=\s*[,}])(?!\s*:)')  # {"ref_id":"R3","pred_old","pred_id":"P2"}
_ORPHAN_FIRST = re.compile(r'(?<=\{)\s*"[^"]*"\s*,\s*(?=")')  # {"orphan","key":"value"}
_ARRAY_OBJECT = re.compile(r'\[""\s*:\s*\[')  # ["":["R1"]  ->  ["R1"]
_UNQUOTED_KEY_START = re.compile(r'([\]}"0-9]\s*,\s*|{\s*)([a-zA-Z_][a-zA-Z0-9_]*")')  # ,errors":  ->  ,"errors":
_QUOTE_FIX_ROUNDS = 50
REQUIRED_KEYS = ("reference_findings", "predicted_findings", "matched_findings", "errors")

# Weights of the CRIMSON paper: a finding's clinical significance, an attribute error's severity; anything else
# the judge writes weighs 0.25 (radeval's default).
SIGNIFICANCE_WEIGHTS = {"urgent": 1.0, "actionable_not_urgent": 0.5, "not_actionable_not_urgent": 0.25,
                        "benign_expected": 0.0}
ATTRIBUTE_WEIGHTS = {"significant": 0.5, "negligible": 0.0}
OTHER_WEIGHT = 0.25
ATTRIBUTE_TYPES = ("location", "severity", "descriptor", "measurement", "certainty", "unspecific",
                   "overinterpretation", "temporal")
# radeval's error_counts keys, in its order (its per-sample table's columns).
COUNT_KEYS = ("false_findings", "missing_findings", "attribute_errors") + tuple(f"{t}_errors" for t in ATTRIBUTE_TYPES)
WEIGHTED_KEYS = ("false_findings", "missing_findings", "attribute_errors")
TERM_KEYS = ("N_G", "E_penalty", "correct", "errors_more_than_correct", "S")


def json_text(raw: str) -> str:
    """The JSON part of a judge's text: the first fenced block, else first "{" to last "}"; trailing commas removed."""
    text = raw.strip()
    fenced = _FENCED.search(text)
    if fenced:
        text = fenced.group(1).strip()
    else:
        start, end = text.find("{"), text.rfind("}")
        if start >= 0 and end > start:
            text = text[start:end + 1]
    return _TRAILING_COMMA.sub(r"\1", text)


def _first_key_wins(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        out.setdefault(key, value)
    return out


def _loads(text: str) -> Any:
    return json.loads(text, object_pairs_hook=_first_key_wins)


def _delimits(text: str, i: int) -> bool:
    """Whether the quote at ``i`` opens or closes a JSON key or value (else it is prose inside a string)."""
    before = text[i - 1] if i > 0 else ""
    after = text[i + 1] if i + 1 < len(text) else ""
    if before in (":", "[", "{") or after in (":", "]", "}"):
        return True
    if before == ",":
        two_before = text[i - 2] if i >= 2 else ""
        return two_before in ('"', "]", "}") or two_before.isdigit()
    if after == ",":
        two_after = text[i + 2] if i + 2 < len(text) else ""
        return two_after in ('"', "[", "{") or two_after.isdigit()
    return False


def _escape_stray_quotes(text: str) -> Any:
    """Parse, escaping one quote of prose (within 5 characters before where parsing fails) per round."""
    for _ in range(_QUOTE_FIX_ROUNDS):
        try:
            return _loads(text)
        except json.JSONDecodeError as exc:
            for i in range(exc.pos, max(0, exc.pos - 5) - 1, -1):
                if i < len(text) and text[i] == '"' and (i == 0 or text[i - 1] != "\\") and not _delimits(text, i):
                    text = text[:i] + '\\"' + text[i + 1:]
                    break
            else:
                raise
    raise json.JSONDecodeError("too many stray quotes", text, 0)


def repaired_json(text: str) -> Any:
    """Parse ``text`` as JSON, trying the judge-mistake repairs in both packages' order (crimson-score's
    ``parse_json_response``); JSONDecodeError when none works."""
    text = text.replace("\u201c", '\\"').replace("\u201d", '\\"').replace("\u2018", "\\'").replace("\u2019", "\\'")
    text = _UNQUOTED_KEY_START.sub(r'\1"\2', _ARRAY_OBJECT.sub("[", text))
    for candidate in (text, _ORPHAN_FIRST.sub("", _ORPHAN_AFTER_COMMA.sub("", text))):
        try:
            return _loads(candidate)
        except json.JSONDecodeError:
            pass
    escaped = _BAD_ESCAPE.sub(r"\\\\", text)
    try:
        return _loads(escaped)
    except json.JSONDecodeError:
        pass
    for candidate in (text, escaped):
        try:
            return _escape_stray_quotes(candidate)
        except json.JSONDecodeError:
            pass
    raise json.JSONDecodeError("not JSON after every repair", text, 0)


def _closed(text: str) -> str | None:
    """A cut-off JSON object closed: an open string ended, a dangling comma dropped, open brackets closed."""
    closers = {"{": "}", "[": "]"}
    pending: list[str] = []
    inside = escaped = False
    for ch in text:
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == '"':
            inside = not inside
        elif not inside:
            if ch in closers:
                pending.append(closers[ch])
            elif ch in "}]" and pending and pending[-1] == ch:
                pending.pop()
    if inside:
        text += '"'
    text = re.sub(r",\s*$", "", text) + "".join(reversed(pending))
    try:
        json.loads(text)
    except json.JSONDecodeError:
        return None
    return text


def parse_judge_output(raw: str) -> Any:
    """radeval's reading of a judge's text (ValueError when it cannot be read): extract, repair, else close a cut-off
    object (parsed then without the first-key-wins rule, as radeval does)."""
    text = json_text(raw)
    try:
        return repaired_json(text)
    except ValueError:
        closed = _closed(text)
        if closed is None:
            raise ValueError("no JSON object could be read") from None
        return json.loads(closed)


def parse_authors_output(raw: str) -> Any:
    """crimson-score's reading of a judge's text (``parse_json_response``): the repairs on the text as it is."""
    try:
        return repaired_json(raw)
    except ValueError:
        raise ValueError("no JSON object could be read (crimson-score reads the answer as it is: no extraction, "
                         "no closing)") from None


def check_evaluation(evaluation: Any) -> None:
    """ValueError unless the object has CRIMSON's four keys and an ``errors`` object."""
    if not isinstance(evaluation, dict):
        raise ValueError(f"expected a JSON object, got {type(evaluation).__name__}")
    for key in REQUIRED_KEYS:
        if key not in evaluation:
            raise ValueError(f"missing key {key!r}")
    if not isinstance(evaluation["errors"], dict):
        raise ValueError(f"'errors' must be an object, got {type(evaluation['errors']).__name__}")


def check_authors_ids(evaluation: dict[str, Any]) -> None:
    """KeyError where crimson-score's formula indexes ``["ref_id"]`` and finds none: every matched pair and every
    attribute error (radeval's skips such an attribute error). Types it cannot read fail in the shared formula."""
    errors = evaluation.get("errors", {})
    for where, items in (("matched pair", evaluation.get("matched_findings", [])),
                         ("attribute error", errors.get("attribute_errors", []))):
        for item in items:
            if "ref_id" not in item:
                raise KeyError(f"a {where} without 'ref_id'")


def score_evaluation(evaluation: dict[str, Any]) -> dict[str, Any]:
    """CRIMSON of one checked judge object: error counts, weighted errors, the formula's terms and the score.

    Weighted reference findings N_G; false findings E_false and missing ones E_miss weighted by their finding's
    significance; each distinct matched reference finding earns its weight w, scaled by w / (w + sum of its
    attribute errors' severity weights) when it has any; S = (correct - E_false) / N_G (when N_G is 0: 1 without
    errors, else -(E_false + E_miss + 1)); CRIMSON = S if S >= 0, else -x / (1 + x) with x = E_false - correct when
    x > 0, else 0; rounded to 4 decimals as both packages do. Raises (TypeError, KeyError, ...) on values of the wrong
    type, which the caller counts as unreadable.
    """
    errors = evaluation.get("errors", {})
    matched = evaluation.get("matched_findings", [])
    references = evaluation.get("reference_findings", [])
    predictions = evaluation.get("predicted_findings", [])

    def weight(item: dict[str, Any], table: dict[str, float], key: str) -> float:
        return table.get(item.get(key, ""), OTHER_WEIGHT)

    ref_weight = {ref["id"]: weight(ref, SIGNIFICANCE_WEIGHTS, "clinical_significance") for ref in references}
    pred_weight = {pred["id"]: weight(pred, SIGNIFICANCE_WEIGHTS, "clinical_significance") for pred in predictions}
    e_false = sum(pred_weight.get(i, 0.0) for i in errors.get("false_findings", []))
    e_miss = sum(ref_weight.get(i, 0.0) for i in errors.get("missing_findings", []))
    attribute_errors = errors.get("attribute_errors", [])
    per_type = {t: sum(1 for e in attribute_errors if t in e.get("error_types", [])) for t in ATTRIBUTE_TYPES}
    by_reference: dict[Any, list[dict[str, Any]]] = {}
    for err in attribute_errors:
        if err.get("ref_id") is not None:
            by_reference.setdefault(err.get("ref_id"), []).append(err)

    n_g = sum(weight(ref, SIGNIFICANCE_WEIGHTS, "clinical_significance") for ref in references)
    if n_g == 0 and not references:
        n_g = len(matched) + e_miss
    seen: set[Any] = set()
    correct = 0.0
    for pair in matched:
        ref_id = pair.get("ref_id")
        if ref_id in seen:
            continue
        seen.add(ref_id)
        base = ref_weight.get(ref_id, 0.0)
        its_errors = by_reference.get(ref_id, [])
        if not its_errors:
            correct += base
        else:
            denominator = base + sum(weight(e, ATTRIBUTE_WEIGHTS, "severity") for e in its_errors)
            correct += base * (base / denominator if denominator > 0 else 0.0)
    excess = e_false - correct
    if n_g == 0:
        s = 1.0 if e_false == 0 and e_miss == 0 else -(e_false + e_miss + 1)
    else:
        s = (correct - e_false) / n_g
    value = s if s >= 0 else (-excess / (1 + excess) if excess > 0 else 0)
    counts = {"false_findings": len(errors.get("false_findings", [])),
              "missing_findings": len(errors.get("missing_findings", [])), "attribute_errors": len(attribute_errors),
              **{f"{t}_errors": per_type[t] for t in ATTRIBUTE_TYPES}}
    return {"score": round(value, 4), "error_counts": counts,
            "weighted_error_counts": {"false_findings": e_false, "missing_findings": e_miss,
                                      "attribute_errors": sum(weight(e, ATTRIBUTE_WEIGHTS, "severity")
                                                              for e in attribute_errors)},
            "terms": {"N_G": n_g, "E_penalty": e_false, "correct": correct, "errors_more_than_correct": excess,
                      "S": s}}


def unreadable(reason: str, deviation: str | None = None) -> dict[str, Any]:
    return {"score": math.nan, "error_counts": None, "weighted_error_counts": None, "terms": None,
            "parse_error": reason, "deviation": deviation}


def _reason(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:300]


def evaluate_output(raw: str | None) -> dict[str, Any]:
    """Score one judge output as crimson-score 0.2.2 does (the board's CRIMSON); never raises.

    ``parse_error`` is None, or why the score is NaN. ``deviation`` is None, or where rexrank departs from
    crimson-score: an object without all four top-level keys, which crimson-score scores as if the missing keys held
    nothing (``{}``: 1.0, a perfect report) and rexrank scores NaN; the value crimson-score gives is in the reason.
    """
    if not isinstance(raw, str):
        return unreadable("no output")
    try:
        evaluation = parse_authors_output(raw)
        try:
            check_evaluation(evaluation)
        except ValueError as missing:
            if not isinstance(evaluation, dict) or not isinstance(evaluation.get("errors", {}), dict):
                raise  # crimson-score fails on these too
            try:  # what crimson-score would score: a deviation only when it gives a number
                check_authors_ids(evaluation)
                theirs = score_evaluation(evaluation)["score"]
            except Exception:  # noqa: BLE001 - crimson-score fails as well: an ordinary unreadable answer
                raise missing from None
            return unreadable(f"{_reason(missing)} (crimson-score 0.2.2 scores it {theirs})", "missing_keys")
        check_authors_ids(evaluation)
        result = score_evaluation(evaluation)
    # A judge's text is hostile: anything crimson-score's code fails on (bad JSON, wrong types, nesting too deep for
    # the json module) is a NaN with its reason, as its evaluate_batch counts it (None), never an exception.
    except Exception as exc:  # noqa: BLE001
        return unreadable(_reason(exc))
    return {**result, "parse_error": None, "deviation": None}


def evaluate_output_radeval(raw: str | None) -> dict[str, Any]:
    """Score one judge output as radeval 2.2.1 does (``crimson_radeval``); never raises. ``parse_error`` is None, or
    why the score is NaN; ``deviation`` is always None (rexrank follows radeval everywhere)."""
    if not isinstance(raw, str):
        return unreadable("no output")
    try:
        evaluation = parse_judge_output(raw)
        check_evaluation(evaluation)
        result = score_evaluation(evaluation)
    # As above: anything radeval's own code would fail on is a NaN with its reason, as radeval's scorer counts it.
    except Exception as exc:  # noqa: BLE001
        return unreadable(_reason(exc))
    return {**result, "parse_error": None, "deviation": None}
