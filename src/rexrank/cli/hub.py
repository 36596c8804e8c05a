"""`rexrank hub`: publish rexrank artefacts to the Hugging Face Hub."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

app = typer.Typer()


@app.command("publish-metrics")
def publish_metrics(
    org: str = typer.Option(..., "--org", help="Hub user or organisation that will own the Spaces ORG/<slug>."),
    dry_run: bool = typer.Option(False, "--dry-run", help="List the Spaces and files that would be uploaded; no network."),
    only: Optional[list[str]] = typer.Option(None, "--only", help="Metric folders to publish (repeat or comma-separate; "
                                             "default: all)."),
    private: bool = typer.Option(False, "--private", help="Create the Spaces as private (existing Spaces keep theirs)."),
    rexrank_requirement: Optional[str] = typer.Option(
        None, "--rexrank-requirement",
        help='Replace the bare `rexrank` line of each requirements.txt, e.g. "rexrank @ git+https://.../rexrank@v0.1.0" '
             "(rexrank is not on PyPI yet). Default: build a wheel from this checkout and upload it into each Space."),
    wheel: Optional[Path] = typer.Option(None, "--wheel", help="Upload this rexrank wheel into each Space instead of "
                                         "building one."),
    metrics_dir: Optional[Path] = typer.Option(None, "--metrics-dir", help="Folder of evaluate modules (default: "
                                               "those of the installed rexrank)."),
) -> None:
    """Upload each metrics/<slug>/ evaluate module as a Gradio Space ORG/<slug>, so evaluate.load("ORG/<slug>") works.

    Needs a token with write access: HF_TOKEN or `hf auth login`. The token is never printed.
    """
    from rexrank.evaluate_modules import publish as hub_publish

    slugs = [s for item in (only or []) for s in item.split(",") if s.strip()] or None
    plans = hub_publish.plan(org, only=slugs, private=private, metrics_dir=metrics_dir)
    if dry_run:
        typer.echo(hub_publish.describe(plans, rexrank_requirement, wheel))
        return
    hub_publish.publish(plans, rexrank_requirement=rexrank_requirement, wheel=wheel, log=typer.echo)


@app.command("publish-leaderboard")
def publish_leaderboard(
    repo: str = typer.Option(..., "--repo", help="The Space to create or update, ORG/NAME."),
    dry_run: bool = typer.Option(False, "--dry-run", help="List the files that would be uploaded; no network."),
    private: bool = typer.Option(False, "--private", help="Create the Space as private (an existing one keeps its "
                                 "visibility); needs --rexrank-requirement."),
    rexrank_requirement: Optional[str] = typer.Option(
        None, "--rexrank-requirement",
        help='Install rexrank from this source, e.g. "rexrank @ git+https://.../rexrank@v0.1.0" (the space extra '
             "is kept). Default: build a wheel from this checkout and upload it into the Space."),
    wheel: Optional[Path] = typer.Option(None, "--wheel", help="Upload this rexrank wheel instead of building one."),
) -> None:
    """Upload spaces/leaderboard/ as the Gradio Space REPO, its requirements naming an installable rexrank.

    Set the Space's variables afterwards (docs/leaderboard.md: store, quotas, Hub dataset repos for persistence).
    Needs a token with write access: HF_TOKEN or `hf auth login`. The token is never printed.
    """
    from rexrank.evaluate_modules import publish as hub_publish

    plans = [hub_publish.leaderboard_plan(repo, private=private)]
    if dry_run:
        typer.echo(hub_publish.describe(plans, rexrank_requirement, wheel))
        return
    hub_publish.publish(plans, rexrank_requirement=rexrank_requirement, wheel=wheel, log=typer.echo)
