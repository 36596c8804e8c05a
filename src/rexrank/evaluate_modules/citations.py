"""The BibTeX entries that more than one evaluate module cites, each declared once here and read by the modules.

A module's ``citation`` is ``cite(...)`` of its entries: the metric's own paper (declared in the module when no other
module cites it), then these, then ReXrank's (``rexrank.data.catalog.REXRANK_BIBTEX``, its owner) where the metric is a
ReXrank column. A card (metrics/<slug>/README.md, a standalone file on the Hub) may hold an entry as text: it must be
the owner's verbatim (tests/test_evaluate_modules.py checks every card against these).
"""

from __future__ import annotations

# RadCliQ and the CXR-Report-Metric scores (Yu et al., Patterns 2023).
RADCLIQ_BIBTEX = """@article{yu2023evaluating,
  title = {Evaluating progress in automatic chest X-ray radiology report generation},
  author = {Yu, Feiyang and Endo, Mark and Krishnan, Rayan and others},
  journal = {Patterns},
  volume = {4},
  number = {9},
  year = {2023}
}"""

# RadEval (Xu et al., EMNLP 2025 demos): radeval's metrics.
RADEVAL_BIBTEX = """@inproceedings{xu-etal-2025-radeval,
  title = {RadEval: A framework for radiology text evaluation},
  author = {Xu, Justin and Zhang, Xi and Abderezaei, Javid and Bauml, Julie and Boodoo, Roger and Haghighi, Fatemeh
            and Ganjizadeh, Ali and Brattain, Eric and Van Veen, Dave and Meng, Zaiqiao and Eyre, David W and
            Delbrouck, Jean-Benoit},
  booktitle = {Proceedings of the 2025 Conference on Empirical Methods in Natural Language Processing: System Demonstrations},
  year = {2025},
  pages = {546--557}
}"""

# BERTScore (Zhang et al., ICLR 2020).
BERTSCORE_BIBTEX = """@inproceedings{zhang2020bertscore,
  title = {BERTScore: Evaluating Text Generation with BERT},
  author = {Zhang, Tianyi and Kishore, Varsha and Wu, Felix and Weinberger, Kilian Q. and Artzi, Yoav},
  booktitle = {International Conference on Learning Representations},
  year = {2020}
}"""

# CheXbert (Smit et al., EMNLP 2020): SembScore's and CE F1's labeller.
CHEXBERT_BIBTEX = """@inproceedings{smit2020chexbert,
  title = {Combining Automatic Labelers and Expert Annotations for Accurate Radiology Report Labeling Using BERT},
  author = {Smit, Akshay and Jain, Saahil and Rajpurkar, Pranav and Pareek, Anuj and Ng, Andrew Y. and Lungren, Matthew P.},
  booktitle = {Proceedings of the 2020 Conference on Empirical Methods in Natural Language Processing},
  year = {2020}
}"""

# BLEU (Papineni et al., ACL 2002).
BLEU_BIBTEX = """@inproceedings{papineni2002bleu,
  title = {BLEU: a Method for Automatic Evaluation of Machine Translation},
  author = {Papineni, Kishore and Roukos, Salim and Ward, Todd and Zhu, Wei-Jing},
  booktitle = {Proceedings of the 40th Annual Meeting of the Association for Computational Linguistics},
  pages = {311--318},
  year = {2002}
}"""

# The COCO caption evaluation code (Chen et al., 2015): pycocoevalcap.
COCO_CAPTIONS_BIBTEX = r"""@article{chen2015microsoft,
  title = {Microsoft COCO Captions: Data Collection and Evaluation Server},
  author = {Chen, Xinlei and Fang, Hao and Lin, Tsung-Yi and Vedantam, Ramakrishna and Gupta, Saurabh and Doll{\'a}r, Piotr and Zitnick, C. Lawrence},
  journal = {arXiv preprint arXiv:1504.00325},
  year = {2015}
}"""


def cite(*entries: str) -> str:
    """A module's citation: the entries one after the other, each on its own lines, ending with a newline."""
    return "".join(entry.strip("\n") + "\n" for entry in entries)


# Every shared entry, for the card check (tests/test_evaluate_modules.py).
SHARED = (RADCLIQ_BIBTEX, RADEVAL_BIBTEX, BERTSCORE_BIBTEX, CHEXBERT_BIBTEX, BLEU_BIBTEX, COCO_CAPTIONS_BIBTEX)
