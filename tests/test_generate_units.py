"""Unit tests of `rexrank generate`'s pure parts: prompts and sections, study inputs, sharding, the JSONL store.

No model is loaded here; the end-to-end runs are in test_generate_run.py.
"""

from __future__ import annotations

import json

import pytest

from rexrank.errors import ConfigError, InputError
from rexrank.generate.prompts import check_template, format_report, render_prompt, split_sections
from rexrank.generate.sharding import batches_for_process, in_input_order, make_batches
from rexrank.generate.store import PartWriter, latest_by_id, part_path, read_parts
from rexrank.generate.studies import build_inputs, resolve_image_mode, rexrank_record


def _study(i, n_images=2, **extra):
    paths = [f"/data/s{i}/{j}.png" for j in range(n_images)]
    return {"study_id": f"s{i}", "image_paths": paths, "key_image": paths[-1] if paths else None,
            "view_positions": ["PA", "LATERAL"][:n_images], "context": "Indication: cough.", **extra}


def test_split_sections_reads_either_order_and_case():
    """Models write headers in any case and order; both sections must come back, text before them dropped."""
    answer = "Sure. IMPRESSION: No acute process.\nFindings:  Lungs are  clear."
    assert split_sections(answer) == {"findings": "Lungs are clear.", "impression": "No acute process."}
    assert split_sections("Lungs are clear.") == {"findings": None, "impression": None}


def test_format_report_per_track():
    """The findings track keeps only the findings; findings+impression is rebuilt in ReXrank's ground-truth shape,
    including the literal None for a missing section; an answer without headers is the report as a whole."""
    answer = "Findings: Heart normal. Impression: No disease."
    assert format_report(answer, "findings") == "Heart normal."
    assert format_report(answer, "findings_impression") == "Findings: Heart normal. Impression: No disease."
    assert format_report("Findings: Heart normal.", "findings_impression") == "Findings: Heart normal. Impression: None"
    assert format_report("Impression: Normal.", "findings") == ""
    assert format_report("  Heart\nnormal. ", "findings") == "Heart normal."


def test_prompt_templates_are_checked_and_rendered():
    """Unknown placeholders fail before any model loads; context appears only when given."""
    with pytest.raises(ConfigError, match="indication"):
        check_template("Describe {indication}")
    with pytest.raises(ConfigError, match="Invalid prompt"):
        check_template("Describe {context")
    template = "Report on {n_images} image(s) ({views}).{context}"
    assert render_prompt(template, context=None, n_images=2, views=["PA", None]) == "Report on 2 image(s) (PA)."
    assert render_prompt(template, context="Cough", n_images=1, views=[]).endswith(" Clinical context: Cough")


def test_build_inputs_key_vs_all_images_and_context():
    """'key' gives the key image (and its view), 'all' every image; context only when enabled; order kept."""
    records = [_study(0), _study(1, n_images=1)]
    key = build_inputs(records, image_mode="key", use_context=False, prompt_template="{views}{context}")
    assert [s.images for s in key] == [("/data/s0/1.png",), ("/data/s1/0.png",)]
    assert key[0].views == ("LATERAL",) and key[0].context is None and key[0].prompt == "LATERAL"
    full = build_inputs(records, image_mode="all", use_context=True, prompt_template="{context}")
    assert full[0].images == ("/data/s0/0.png", "/data/s0/1.png") and full[0].context == "Indication: cough."
    assert [s.index for s in full] == [0, 1]


def test_build_inputs_reads_datasets_image_dicts_and_rejects_duplicates():
    """Rows of a datasets.Dataset carry images as {"path", "bytes"} dicts; duplicate ids would collide on output."""
    row = {"study_id": "a", "images": [{"path": "/x/a.png", "bytes": None}], "key_image": None}
    (study,) = build_inputs([row], image_mode="key", use_context=False, prompt_template="")
    assert study.images == ("/x/a.png",)
    with pytest.raises(InputError, match="twice"):
        build_inputs([_study(0), _study(0)], image_mode="all", use_context=False, prompt_template="")


def test_image_mode_follows_model_capability():
    """A single-image model cannot be asked for all images; auto picks what the model supports."""
    assert resolve_image_mode("auto", False, "m") == "key"
    assert resolve_image_mode("auto", True, "m") == "all"
    with pytest.raises(ConfigError, match="--images key"):
        resolve_image_mode("all", False, "m")
    with pytest.raises(ConfigError, match="Unknown --images"):
        resolve_image_mode("first", True, "m")


def test_rexrank_record_has_the_upstream_fields():
    """predictions.json entries follow the official ReXrank JSON shape, so upstream tools can read them."""
    entry = rexrank_record(_study(0, findings="Clear.", impression=None, split="test"), "/data")
    assert entry["image_path"] == ["s0/0.png", "s0/1.png"] and entry["key_image_path"] == "s0/1.png"
    assert entry["report"] == "Findings: Clear. Impression: None" and entry["frontal_lateral"] == ["PA", "LATERAL"]


@pytest.mark.parametrize("dataset", ["rexgradient", "ReXGradient"])
def test_private_sets_keep_their_reference_out_of_the_run_folder(dataset):
    """predictions.json sits where code under test works: a private set's sections never go into it."""
    entry = rexrank_record(_study(0, findings="SECRET-FINDINGS", impression="SECRET-IMPRESSION", dataset=dataset),
                           "/data")
    assert "SECRET" not in repr(entry) and entry["image_path"] == ["s0/0.png", "s0/1.png"]
    assert "SECRET-FINDINGS" in repr(rexrank_record(_study(0, findings="SECRET-FINDINGS", dataset="iu_xray"), "/"))


@pytest.mark.parametrize("world", [1, 2, 3, 5])
def test_batches_are_the_same_whatever_the_process_count(world):
    """Batches are formed before they are dealt, so every process count runs the same batches, and together the
    processes cover every study exactly once (3 and 5 processes: where apply_padding slicing goes wrong)."""
    items = list(range(23))
    batches = make_batches(items, 4)
    dealt = [b for rank in range(world) for b in batches_for_process(batches, rank, world)]
    assert sorted(map(tuple, dealt)) == sorted(map(tuple, batches))
    assert sorted(x for b in dealt for x in b) == items


def test_in_input_order_ignores_arrival_order():
    records = {sid: {"study_id": sid} for sid in ["c", "a", "b"]}
    assert [r["study_id"] for r in in_input_order(["a", "b", "c"], records)] == ["a", "b", "c"]
    assert in_input_order(["a", "z"], records)[1] is None


def test_store_cuts_a_torn_tail_and_prefers_successes(tmp_path):
    """A process killed mid-write leaves half a line: readers skip it and the owner cuts it before appending.
    A study retried after an error keeps its success, whichever file it is in."""
    path = part_path(tmp_path, 0)
    with PartWriter(path) as writer:
        writer.write([{"study_id": "a", "report": "r", "error": None}, {"study_id": "b", "report": None,
                                                                        "error": "boom"}])
    with open(path, "a") as handle:
        handle.write('{"study_id": "c", "rep')
    assert [r["study_id"] for r in read_parts(tmp_path)] == ["a", "b"]
    with PartWriter(path) as writer:
        writer.write([{"study_id": "c", "report": "ok", "error": None}])
    lines = path.read_text().splitlines()
    assert [json.loads(line)["study_id"] for line in lines] == ["a", "b", "c"]
    with PartWriter(part_path(tmp_path, 1)) as writer:
        writer.write([{"study_id": "b", "report": "fixed", "error": None}, {"study_id": "a", "report": None,
                                                                             "error": "late failure"}])
    best = latest_by_id(read_parts(tmp_path))
    assert best["b"]["report"] == "fixed" and best["a"]["report"] == "r" and best["c"]["report"] == "ok"


@pytest.mark.parametrize("damage", [b"\x00\xff\n", b'{"study_id": "c", "report": "\xff"}\n', b"\x00\x00\x00\n"])
def test_store_refuses_bytes_it_never_writes(tmp_path, damage):
    """Bytes that are not UTF-8, or a NUL (json.dumps escapes control characters, so rexrank never writes one), in a
    part file are one InputError naming the file, the line and the fix, not a UnicodeDecodeError; the file is left
    as it was."""
    path = part_path(tmp_path, 0)
    with PartWriter(path) as writer:
        writer.write([{"study_id": "a", "report": "r", "error": None}])
    with open(path, "ab") as handle:
        handle.write(damage)
    before = path.read_bytes()
    with pytest.raises(InputError) as caught:
        read_parts(tmp_path)
    message = str(caught.value)
    assert f"{path} line 2 holds bytes rexrank never writes" in message and "\n" not in message
    assert "--overwrite" in message and "Move it out of the folder" in message
    assert path.read_bytes() == before


def test_image_identity_names_no_path_and_old_records_still_compare(tmp_path):
    """A part file records its images by a digest of the absolute path and the size (no host path in the run's
    files); a record written before digests (the absolute path itself) still matches the same files, so an older
    run resumes, and other files or sizes do not match."""
    from rexrank.generate.images import image_identity, path_digest, same_images

    image = tmp_path / "a.png"
    image.write_bytes(b"12345")
    identity = image_identity([str(image)])
    assert identity == [[path_digest(str(image)), 5]] and str(tmp_path) not in json.dumps(identity)
    assert same_images(identity, [str(image)]) and same_images([[str(image), 5]], [str(image)])
    assert not same_images([[str(image), 4]], [str(image)]) and not same_images(identity, [str(tmp_path / "b.png")])
    assert not same_images([["x"]], [str(image)])  # not a pair: a record rexrank did not write
