"""A small built-in radiology corpus (written for rexrank) to build stand-in tokenizer vocabularies offline."""

from __future__ import annotations

import re
import string

SENTENCES = """
The heart size is normal. The cardiomediastinal silhouette is within normal limits.
There is no focal consolidation, pleural effusion or pneumothorax. The lungs are clear bilaterally.
Mild cardiomegaly with pulmonary vascular congestion and small bilateral pleural effusions.
Right lower lobe opacity may reflect atelectasis or pneumonia. Left basilar airspace disease.
No acute osseous abnormality. Degenerative changes of the thoracic spine. Healed right rib fractures.
Endotracheal tube terminates 4 cm above the carina. Nasogastric tube courses below the diaphragm.
Right internal jugular central venous catheter tip in the superior vena cava. Sternotomy wires are intact.
Moderate pulmonary edema, worse compared to the prior radiograph. Interval improvement of the effusion.
Calcified granuloma in the left upper lobe. Hyperinflated lungs consistent with emphysema or COPD.
No evidence of free air under the diaphragm. Stable appearance of the mediastinal contours.
Patchy opacities in both lung bases, likely atelectasis; infection is not excluded.
A nodule measuring 8 mm is seen in the right middle lobe. Recommend CT for further evaluation.
Pacemaker leads project over the right atrium and right ventricle. Aortic knob calcification.
Findings: Impression: Comparison: Indication: Technique: PA and lateral views of the chest.
Enlarged cardiac silhouette, lung opacity, lung lesion, edema, consolidation, fracture, support devices.
Small left apical pneumothorax without tension. Subcutaneous emphysema along the chest wall.
Elevated right hemidiaphragm. Blunting of the costophrenic angles. Hilar prominence bilaterally.
Interstitial markings are increased. Kerley B lines. Vascular redistribution. Tortuous aorta.
Frontal and lateral views. Portable AP upright radiograph. Low lung volumes limit evaluation.
There are no XXXX of a large pleural effusion. No radiographic evidence of acute cardiopulmonary disease.
""".strip()


def words() -> list[str]:
    """Distinct lower-case words and punctuation of the corpus, in first-seen order."""
    seen: dict[str, None] = {}
    for token in re.findall(r"[A-Za-z]+|\d+|[^\sA-Za-z\d]", SENTENCES.lower()):
        seen.setdefault(token, None)
    return list(seen)


def characters() -> list[str]:
    """Every printable ASCII character, so any ASCII text tokenizes without [UNK]."""
    return [c for c in string.printable if not c.isspace()]
