"""Jinja2 templates of the Markdown pages `bench report` writes.

Kept as strings in the package so an installed bench needs no data files. Nothing here
may print the current time: the same input must render the same bytes.
"""

REPORT = """\
# Atlas report: {{ title }}

Commit `{{ commit }}`{% if dirty %} (some compared runs had uncommitted changes: --allow-dirty){% endif %} · \
experiment `{{ experiment }}` · {{ n_compared }} of {{ n_runs }} run(s) compared, on {{ envs|length }} \
environment(s): {{ envs|join(', ') }}.
Runs started {{ first_start }} – {{ last_start }} (UTC). Written by `bench report` from `{{ results }}`.

## Summary

{% for line in summary -%}
- {{ line }}
{% else -%}
- Nothing to compare: no run produced figures (see *Data problems*).
{% endfor %}
{%- if busy %}

## Runs on a busy host

These runs shared their machine with other work (host CPU at least 90 % busy while the
job used under half of its cores, or at least 10 % of the CPU time stolen by the
hypervisor, or at least 20 % spent waiting on I/O): their figures are not the platform's
alone, and the advisor leaves them out.

{% for run, why in busy -%}
- `{{ run }}`: {{ why }}
{% endfor %}
{%- if busy_table %}

The headline figures of those environments with every compared run and with the quiet
runs only (the Summary and the tables below use every run):

{{ busy_table }}
{% endif %}
{%- endif %}
{%- if expected %}

## Outside the expected band

Runs whose figures fall outside the band in their environment's `expected.yaml`
(a reference with tolerances, changed only by pull request):

{% for line in expected -%}
- {{ line }}
{% endfor %}
{%- endif %}
{%- if crosscheck %}

## Telemetry cross-check

Where two sources of one figure disagree (the recorder's samples, Slurm's accounting),
or the GPU looked busy while its SMs had little work:

{% for line in crosscheck -%}
- {{ line }}
{% endfor %}
{%- endif %}
{%- if changes %}

## Change points in the history

Across every commit collected for these environments (the results folder and the
`results` branch), confirmed by a Mann–Whitney U test of the runs on each side
(`bench history` lists every metric):

{% for line in changes -%}
- {{ line }}
{% endfor %}
{%- endif %}

## Identical jobs?

What makes two runs the same job, per environment: `identical` when every environment
recorded the same value, else each one's value (the exact difference).

{{ identity_table }}
{%- if shape_note %}

{{ shape_note }}
{%- endif %}
{%- if pairs_table %}

## Differences between environments

Ratio = median of `{{ pairs_env }}` ÷ median of the baseline `{{ baseline }}`. 95 % BCa confidence interval from \
{{ resamples }} bootstrap resamples (seeded; percentile where BCa cannot be computed); two-sided Mann–Whitney U \
when each side has ≥ 3 runs, its p adjusted by Benjamini–Hochberg over each environment's metrics (false \
discovery rate 0.05). A difference smaller than the pair's noise floor (the larger of the two environments', \
from the *Noise floor* section) reads "within noise" and has no winner, whatever its p.

{{ pairs_table }}
{%- endif %}
{%- if noise %}

## Noise floor

How far runs of one commit scatter on each environment (`bench noise`; stored in `results/<env>/noise.json`): \
a PR's change below it, or a difference between two environments below the larger of their floors, reads \
"within noise", whatever its p.

{% for line in noise -%}
- {{ line }}
{% endfor %}
{%- endif %}

## Per environment

Median and olympic mean (mean without the fastest and slowest run when there are ≥ 3).
Raw figures are for the whole job (all its GPUs); rows that say "per GPU", GPU-hours and cost
per 1,000 images are normalised, so they compare jobs of different shapes.

{{ summary_table }}

Cost model per environment:
{% for env, note in cost_notes %}
- {{ env }}: {{ note }}
{%- endfor %}
{%- if timeline_table %}

## Where the time goes

From bench's submit to the record placed in results, per environment: the median of each
phase of the runs' timelines, its spread over the runs and the clock it was read from (a
phase that crosses two clocks names both). A phase no clock saw is unknown, with the
reason, never 0; one the kind does not have says so ("no scheduler"); times are rounded
to their clock, and a value at or below its clock's resolution reads "≤ 1 s".
{% if timeline_chart %}
![Where the time goes](timeline.png)

{{ timeline_caption }}
{% endif %}
{{ timeline_table }}
{%- for line in timeline_medians %}

{{ line }}
{%- endfor %}
{%- if timeline_sums %}

Every other time figure in this report is a named sum of these phases, from the phases
of the same run (here each environment's median run, so the numbers add up; a phase the
kind has none of adds nothing):
{% for line in timeline_sums %}
- {{ line }}
{%- endfor %}
{%- endif %}
{%- if timeline_trace %}

Every run's phases, one track per run, open in a trace viewer:
[timeline.trace.json](timeline.trace.json) (Trace Event Format; load it in
https://ui.perfetto.dev or chrome://tracing).
{%- endif %}
{%- endif %}

## Runs

{{ runs_table }}
{%- if scaling_table %}

## Scaling efficiency

Median images/s with N GPUs against N × the median with 1 GPU, per environment (100 % =
perfect linear scaling).

{{ scaling_table }}
{%- endif %}

## Excluded runs

Only successful runs of one experiment and one configuration (`config_sha256`), from a clean tree, enter \
the statistics above.

{% if excluded_table -%}
{{ excluded_table }}
{%- else -%}
None: every run of this commit is compared.
{%- endif %}

## Charts

{% for chart in charts -%}
![{{ chart.title }}]({{ chart.file }})
{% if chart.note %}
{{ chart.note }}
{% endif %}
{% endfor -%}
{% if missing_charts %}
Not drawn (no environment recorded them): {{ missing_charts|join(', ') }}.
{% endif %}

## Advisor

{% set advised = advice|selectattr(1)|list -%}
{% if not advised %}No advice: the compared runs recorded none of what the advisor reads.
{% endif -%}
{% for env, notes in advised -%}
**{{ env }}**

{% for note in notes -%}
- {{ note }}
{% endfor %}
{% endfor -%}

## Provenance

| | {{ envs|join(' | ') }} |
|---|{% for e in envs %}---|{% endfor %}
{% for label, values in provenance -%}
| {{ label }} | {{ values|join(' | ') }} |
{% endfor %}
{% if commit == "unknown" %}
No git sha recorded (imported runs?): runs of every commit are mixed in this report.
{% endif %}

## Data problems

{% for run, items in problems -%}
- `{{ run }}`: {{ items|join('; ') }}
{% else -%}
None: every run has a complete record.
{% endfor %}
"""

INDEX = """\
# Reports

Written by `bench report` (one folder per compared commit, newest first) and committed by CI.
Each folder's `README.md` has the tables, charts, advisor notes and provenance; this index is
regenerated from the folders' `summary.json` each time a report is written.

The machine column says what each environment ran on and how busy its host was: figures
of two reports on different machines (marked) are not a regression or a speed-up.

| report | commit | environments | runs | median images/s | problems | machine |
|---|---|---|---:|---|---:|---|
{% for r in reports -%}
| [{{ r.folder }}]({{ r.folder }}/README.md) | `{{ r.commit }}` | {{ r.envs|join(', ') }} | {{ r.runs }} | \
{% for env, v in r.images_per_s %}{{ env }}: {{ v }}{% if not loop.last %}, {% endif %}{% endfor %} | \
{{ r.problems }} | {{ r.machine }} |
{% else -%}
| (none yet) | | | | | | |
{% endfor %}
{%- if latest_history %}

Images/s across commits (from the newest report):

![history]({{ latest_history }})
{%- endif %}
"""
