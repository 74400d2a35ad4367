"""Typed settings of the miss-ratio-curve estimator (the ``mrc:`` section of an env config)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from cachetuner.config import Policy
from cachetuner.keysample import MODULUS
from cachetuner.mrc.knobs import KnobVariant
from cachetuner.mrc.rule_settings import MRCControlSettings, ReferenceInterval


def _default_policies() -> list[Policy]:
    """The policies with a curve by default (a fresh list per model)."""
    return ["allkeys-lru", "allkeys-lfu"]


class MRCConfig(BaseModel):
    """Full-range miss-ratio curves from miniature simulations on a spatial key sample.

    Sizes are absolute (``n_sizes`` log-spaced over the env's ``maxmemory`` bounds), so the curve
    shows where the cost bottoms out wherever the cache runs now. Small miniature caches get a higher
    sampling rate than ``rate`` so that each holds at least ``min_objects`` objects (Waldspurger et
    al., ATC'17: a miniature cache of a handful of objects is all noise); rates nest, so one stream
    feeds all of them.
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    enabled: bool = True
    n_sizes: int = Field(24, ge=4, le=128, description="log-spaced absolute sizes spanning the maxmemory bounds")
    policies: list[Policy] = Field(
        default_factory=_default_policies,
        min_length=1,
        description="policies with a curve (each: n_sizes miniature simulations)",
    )
    rate: float = Field(0.01, gt=0, le=1, description="base share of the key space sampled (SHARDS rate)")
    min_keys: int = Field(500, ge=0, description="raise the base rate so that about this many keys are sampled")
    min_objects: int = Field(
        100, ge=0, description="raise a miniature cache's rate until it holds about this many objects"
    )
    max_rate: float = Field(0.25, gt=0, le=1, description="cap of the per-size rate (cost of the smallest sizes)")
    min_sampled_per_interval: int = Field(
        100, ge=0, description="raise the base rate so that an average interval yields about this many sampled requests "
        "(an interval of reference_interval_s when that is set)"
    )
    reference_interval_s: ReferenceInterval = Field(
        "auto", description="the interval min_sampled_per_interval counts (10 s, where every measurement was made): "
        "the base rate then gives the same sampled requests per second at any interval, so the curves gather evidence "
        "as fast in wall time at 60 s as at 10 s (counted per interval, a 60 s interval sampled a sixth of the rate and "
        "the rule's evidence gates took six times as long). Not adopted as the default by four rules written before "
        "fresh interval audits ran: with the rule's reference_interval_s (mean lower, swings too wide), alone "
        "(dearer: 2.73 -> 3.02 %) and with both the rule's and short_window_min_requests (mean lower, swings too wide; "
        "docs/control.md); a fourth, with the rule's, found it cheaper at 60 s only, a fifth at 60 and 120 s and a "
        "sixth at 300 s. auto (the default, as the rule's): 10 at intervals of 57 s or more, per interval below "
        "(cachetuner.mrc.rule_settings.resolve_reference). null = per interval, whatever its length"
    )
    half_life_gets: float = Field(
        1500.0, gt=0, description="window: counts weigh half after this many more sampled GETs (at the base rate)"
    )
    half_life_growth: float | None = Field(
        0.5, gt=0, description="lengthen the long window as its regime ages: half-life = max(half_life_gets, this x "
        "the sampled GETs since the window last (re)started, less half_life_growth_after half-lives): a settled "
        "regime's curve averages ever more evidence (less churn on long traces), while the start and every "
        "restart by the shift test keep the short fixed window; the shift test's short window never grows. "
        "null = a fixed half-life (what the shipped policy was trained with; docs/mrc.md)"
    )
    half_life_growth_after: float = Field(
        4.0, ge=0, description="the growth counts only the sampled GETs after this many fixed half-lives of the "
        "regime: by then the miniature caches' cold start weighs 1/16 or less, so a longer window does not keep it"
    )
    short_half_life_share: float = Field(
        0.25, gt=0, le=1, description="half-life of the shift test's short window, as a share of half_life_gets"
    )
    shift_threshold: float | None = Field(
        0.15, gt=0, le=1, description="restart the window when the short and long windows' hit ratios differ by "
        "more than this on average over the sizes (null: one window, no shift test)"
    )
    short_window_min_requests: float | None = Field(
        3750.0, gt=0, description="a floor, in requests of the stream, under the shift test's short window: a slow "
        "stream's raised base rate (min_sampled_per_interval) counts every request as a sampled GET, so the short "
        "window's 375 span 37 s at 10 req/s, a trace's phases of a minute read as shifts, and each restarts the long "
        "window (orm-night at 10 req/s: a restart every ~30 intervals, and shrinks after them that dropped warm "
        "data; at 10 s there +29 % over best-static, 0.4 % with it). Never longer than the long window; it acts only "
        "where the base rate is raised past 10 % (under ~100 req/s at 10 s, or under ~5,000 keys). Adopted "
        "(2026-12-07) by the third rule written before its fresh suites ran: no harm at 10 s and 30-60 s, and on "
        "twelve cells of slow streams over hours mean regret 5.82 -> 1.30 % (mrc), 5.90 -> 0.75 % (policy); two "
        "earlier rules had not adopted it (docs/control.md). null = counted in sampled GETs alone (what the "
        "shipped policy was trained with)"
    )
    shift_min_evidence: float = Field(
        300.0, ge=0, description="expected sampled GETs both windows need at a size before it enters the shift test"
    )
    adjust: bool = Field(True, description="correct for over/under-sampled references (a key sample holding more or "
                         "fewer GETs than rate x all GETs)")
    adjust_slope: Literal["regression", "shards"] = Field(
        "regression", description="hits credited per missing GET: 'regression' = sum(g h)/sum(g^2) over the sampled "
        "keys (cachetuner.mrc.window), 'shards' = 1 (SHARDS-adj)")
    size_correction: bool = Field(
        False, description="place each miniature cache's point at the full-cache size its key sample stands for: a "
        "sample whose GETs carry fewer (more) bytes than rate x the stream's has a smaller (larger) working set, so "
        "the miniature cache acts like a larger (smaller) full cache; the shift is damped by the byte regression's "
        "slope, as a hot key's GETs say nothing about space (cachetuner.mrc.estimator; needs adjust). Off by "
        "default: it makes the curves closer to full simulation (bench mrc, LLM-sized values 1.01 -> 0.90 pp for "
        "LRU) but the controllers' decisions on held-out suites no better (docs/mrc.md, 2026-12-03)")
    adjust_outlier_sd: float = Field(
        3.0, gt=0, description="regression: a deficit of GETs beyond this many sd of key-sampling noise is taken as "
        "unsampled hot keys and credited as hits")
    warm_from_skipped: bool = Field(
        False, description="before the episode, feed the requests its workload skips (`skip`, a suite's `history:`) to "
        "the estimator, interval by interval (MRCEstimator.watch): the curves of a controller that has watched that "
        "traffic. The simulated cache itself starts cold either way. The evaluation sets it for the controllers that "
        "declare `warm_curves` (`mrc-history`)")
    knob_variants: list[KnobVariant] = Field(
        default_factory=list, description="under a memory budget only: eviction-knob settings that each get one more "
        "miniature cache, at the cap, so that the mrc controller (with controllers.mrc.knobs) can choose the knobs "
        "with the policy (cachetuner.mrc.knobs; docs/mrc.md). Empty: the knobs stay the base config's")
    modulus: int = Field(MODULUS, ge=2)
    anchor: MRCControlSettings | None = Field(
        None, description="the decision rule behind the env's anchor (what `mrc-offset` actions and the MRC "
        "observation features are relative to); None = the `mrc` controller's defaults. A training config fills "
        "it from its `controllers.mrc`, so the resolved config a model ships with pins the rule it was trained "
        "around and the controller it is compared with is the same rule")

    def pin_anchor(self, rule: MRCControlSettings) -> None:
        """Make ``rule`` (a config's ``controllers.mrc``) the anchor's, unless ``anchor`` names its own."""
        if self.anchor is None:
            self.anchor = rule.model_copy()
