"""``distill serve``: the dashboard and its JSON API, over one data root.

The web server only reads files and asks: it never runs a loop. A start or
a resume spawns ``distill loop run`` (or ``resume``) as its own process; a
stop or a pause is the loop's own step-boundary request. So a server can be
restarted, or run twice, and shows whatever is running.

- :mod:`toolkit.serve.views`: what the pages and the API show (typed).
- :mod:`toolkit.serve.generations`: a run page's row per generation (promoted, kept, refused, and why).
- :mod:`toolkit.serve.charts`: what each chart draws (series, styles, axes and units); ``static/app.js`` draws it.
- :mod:`toolkit.serve.curves`: the trainers' CSV curves (PPO per update, BC per epoch) per generation.
- :mod:`toolkit.serve.gate_report`: a PPO or student gate's paired rounds and GSPRT trace.
- :mod:`toolkit.serve.compare`: two or more runs side by side.
- :mod:`toolkit.serve.control`: start, pause, resume, stop.
- :mod:`toolkit.serve.security`: loopback by default, a token otherwise, no
  cross-site requests.
- :mod:`toolkit.serve.app`: the FastAPI app (API under ``/api``, pages, static files).
"""
