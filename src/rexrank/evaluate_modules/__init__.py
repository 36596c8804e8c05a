"""The evaluate modules of ``metrics/<slug>/`` and their Spaces: the helpers each thin module file calls
(``common``), the Gradio app every metric Space runs (``app``) and publishing them to the Hub (``publish``).
"""
