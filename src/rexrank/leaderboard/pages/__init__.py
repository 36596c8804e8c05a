"""The board as HTML pages rendered on the server (issue 48, phase 1), served beside today's gradio board.

Every view is a URL under ``routes.PREFIX`` whose query is a shareable link in ``links``' language (``?tab=``,
``track=``, ``q=``, ``sort=``, ``model=``, ``compare=`` ...: one owner of the names, limits and checks, so a link
of the gradio board opens the same view here). ``params`` reads a query into a checked ``links.Link``; ``render``
turns the views (``views.Views``, ``compare_view``, ``about``) into HTML through ``html``'s escaping helpers;
``routes`` serves the pages, the live part of a page (what a search as typed and a changed board replace), the
store's generation with an ETag, and the stylesheet and script (``board.css``, ``board.js``), gzip-compressed.
Nothing here derives a value the views own: rows, cells, marks, ranks and messages come from them.
"""
