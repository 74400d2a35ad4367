"""Typed settings of the ``mrc`` decision rule (the ``controllers.mrc`` section, and the env's ``mrc.anchor``).

Kept apart from the rule (:mod:`cachetuner.mrc.decide`, whose docstring explains each part and why): the fields
and their measured reasons are most of the text, and config loaders need them without the rule.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field


def check_reference(v: Any) -> Any:
    """A ``reference_interval_s`` value as given in a config: one line for a bad one, not one per member of the
    union."""
    if v is None or v == "auto":
        return v
    if isinstance(v, bool) or not isinstance(v, int | float) or not 0 < v < float("inf"):
        raise ValueError(f"{v!r}: give seconds > 0, auto or null")
    return float(v)


#: a ``reference_interval_s`` setting: seconds, ``auto`` (see :func:`resolve_reference`) or None (per interval);
#: validated once here for every config that takes one (one line for a bad value)
ReferenceInterval = Annotated[float | Literal["auto"] | None, BeforeValidator(check_reference)]


class MRCControlSettings(BaseModel):
    """The ``mrc`` controller (Macaron-style cost minimisation on miss-ratio curves)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    n_candidates: int = Field(96, ge=8, description="log-spaced candidate sizes between the bounds")
    hysteresis: float = Field(
        0.03, ge=0, description="switch only when the predicted saving exceeds this share of the current cost"
    )
    hysteresis_growth: float | None = Field(
        0.01, ge=0, description="the band a growth's predicted saving must exceed instead (null: `hysteresis`): a "
        "growth keeps the data it lets in, so a narrower band for growths alone does not risk dropping warm data "
        "(adopted 2026-12-05 by the rule of experiments/suite-audit-17.yaml, written before its run)"
    )
    shrink_band_misses: float | None = Field(
        None, ge=0, le=1, description="a shrink's band as the cost of this share of the interval's GETs missing, instead "
        "of `hysteresis` x the predicted cost: the band guards against the curves' error in hit ratio, whose cost is "
        "that share of the GETs whatever the hit ratio; the memory side of a cost is exact. null = `hysteresis`"
    )
    shrink_band_cap_misses: float | None = Field(
        0.01, ge=0, le=1, description="a shrink's band is at most the `hysteresis` share of the memory cost at the "
        "current size plus the cost of this share of the interval's GETs missing (today's band where that is smaller): "
        "the band guards against the curves' error in hit ratio (~1 pp), whose cost does not grow with the misses no "
        "size avoids; on a scan-like trace (hit ratio of a few %) a share of the whole cost, nearly all unavoidable "
        "misses, blocks every shrink whose memory saving is real. Unlike shrink_band_misses it only ever narrows the "
        "band, and only where misses are over about a third of the GETs. Pre-registered alone on 2026-12-06 and not "
        "adopted (a fresh mean 0.02 pp higher); adopted the same day with size_shortfall 0.05 by the rule of audits "
        "30-32 and window audits 24-26, written before they ran (docs/control.md). null = off (the rule before)"
    )
    shrink_band_cap_hit_ratio: float | None = Field(
        0.2, gt=0, le=1, description="shrink_band_cap_misses applies only while the curves' predicted hit ratio at the "
        "size and policy in force is below this: a scan, where most GETs miss at any size near the one in force. A "
        "loop longer than the cache also misses often, but a young curve underrates the large cache that holds it, "
        "so the curves' error there is larger than the cap allows (on seen cells the cap alone gave back warm loops: "
        "LIRS gli and multi1, mixed-phases). null = wherever the cap is on"
    )
    confirm: int = Field(3, ge=1, description="intervals in a row the same target must win before growing")
    shrink_confirm: int = Field(
        8, ge=1, description="intervals in a row a smaller target must win before shrinking (a shrink drops warm data)"
    )
    shrink_patience: int | None = Field(
        None, ge=1, description="shrink to the cost curve's optimum, past the hysteresis band, once it has been a "
        "smaller size of the policy in force, predicted cheaper than the size in force, for this many intervals in a "
        "row (shrink_min_weight's evidence and the payback and regrow checks still hold): a shrink goes only to the "
        "band's edge (drop as little warm data as the curve insists on), and from there the saving left is within the "
        "band by construction, so a stable curve held the cache a `hysteresis` share of its cost above the optimum "
        "for good (Corda at `scaled`, seen: 30 MiB against the optimum's 15, 3.0 % of the cost). The band guards "
        "against one reading's error; a saving predicted every interval for this long is the workload. Pre-registered as "
        "rule eight (2026-12-07) and not adopted: on 236 fresh cells at 10-300 s 30 was cheaper pooled (1.66 -> 1.56 %, "
        "both controllers) but dearer for mrc at 120 s (+0.14 pp, over the rule's +0.10; ARC P3 at `cheap-backend` "
        "-2.2 -> +13.1 %), where 30 scaled to 2 intervals is the shortest wait in wall time (docs/control.md). "
        "null = off"
    )
    shrink_min_weight: float = Field(
        1500.0, ge=0, description="windowed GETs every curve point accounts for before any shrink: a young curve has not "
        "seen the long reuse distances yet, so it underrates a large cache (the windowed weight saturates at "
        "mrc.half_life_gets / ln 2, 2,164 by default)"
    )
    payback_intervals: float = Field(
        30.0, gt=0, description="a move must repay its switch and refill cost within this many intervals"
    )
    payback_min_intervals: float | None = Field(
        3.0, ge=1, description="payback_intervals scaled to a long interval (reference_interval_s) never falls below "
        "this many intervals: in wall time the 30 intervals of 10 s are one interval of 300 s, the interval in which a "
        "growth refills, so a growth had to repay its refill within the refill itself (its saving at least half its "
        "gross gain), and at 300 s the rule held a cache far below a predicted optimum (orm-night with LLM sizes at 30 "
        "req/s, `scaled`: 14 MiB held for 40 intervals against a predicted optimum of 39-46 MiB 13-19 % cheaper; "
        "regret 9.2 %). 3 = the interval that refills and two to repay it; it changes nothing at 100 s or less. "
        "Adopted 2026-12-08 by rule twelve, written before its runs: on 70 fresh cells at 120 and 300 s mean regret "
        "-0.13 pp for mrc and the policy, 300 s -0.22 pp (docs/control.md). null = off (the scaled count, at least one)"
    )
    min_weight: float = Field(
        500.0, ge=0, description="windowed GETs every curve point accounts for (its evidence) before acting: long reuse "
        "distances show only after a while, and a young curve always favours a small cache. 500 was chosen over 1,000 "
        "on the shipped recipe's own training and validation workloads (docs/control.md); shrinks wait longer anyway "
        "(shrink_min_weight)"
    )
    gets_smoothing: float = Field(
        0.05, gt=0, le=1, description="EWMA weight of the newest interval's GET count: size for the sustained load, not a burst"
    )
    gets_floor_smoothing: float | None = Field(
        0.01, gt=0, le=1, description="EWMA weight of a slow estimate of the GETs per interval (a plain mean until "
        "1/weight intervals); misses and refills are priced at the larger of it and the gets_smoothing estimate, so a "
        "load that paused still counts as the load the cached data meets when it returns (CloudPhysics on its own "
        "clock writes between two read bursts what the second reads). None: off. See docs/control.md"
    )
    free_growth: float = Field(
        0.01, ge=0, le=1, description="grow straight to the largest allowed size, curves ready or not, when its extra "
        "memory (+ switch) cost per interval is at most this share of the current misses' cost: misses do not rise "
        "with size, so such a move can lose no more than that share, while growing step by step behind a young "
        "curve (which underrates large caches) loses every interval it waits (list prices: memory ~1e-5 of the "
        "miss cost); 0 = off. Not only once the cache is full: growing only then was measured (2026-12-01) to lose "
        "the first evictions' hits (web12 at list prices +0.9 %) to save memory worth ~1e-5 of the misses"
    )
    free_growth_amortized: bool = Field(
        True, description="free growth counts the switch price spread over payback_intervals, like every other move "
        "of the rule, not whole in one interval: the price is paid once and the memory every interval. At low request "
        "rates (10 req/s: ~50 misses an interval) 1 % of an interval's misses is less than the one miss a config change "
        "costs, so without this free growth never fired there (2026-12-02)"
    )
    free_shrink: float | None = Field(
        1.25, ge=1, description="shrink past the shrink gates (shrink_min_weight, shrink_confirm) when the memory given "
        "back per interval is at least this multiple of what *all* the hits of the cache in force are worth (GETs - "
        "misses, smoothed over the intervals at its size, times the miss price): even if the smaller cache hit nothing, "
        "the move saves money, so a young curve's bias against large caches cannot make it a loss; the cost "
        "curve still chooses the target. null = off"
    )
    free_shrink_blind: bool = Field(
        True, description="free shrink also before the curves are ready: the same bound needs no curve, so a full "
        "cache whose hits (over at least `confirm` full intervals) are worth less than the memory a shrink gives back "
        "shrinks to the largest size that gives back enough and is at least a 1.25x step (drop as little data as the "
        "bound allows)"
    )
    free_shrink_min_gets: float | None = Field(
        1500.0, ge=0, description="free shrink (and free_shrink_blind) only once the cache in force has served at least "
        "this many GETs at its size and policy since it was full: the bound compares the memory with every hit that "
        "cache makes, and a cache that has barely been read has not shown that its hits are worth little. Found on "
        "CloudPhysics with AI-inference value sizes (2026-12-03): three full intervals of writes and no reads (zero "
        "GETs, so zero hits) passed the bound and dropped data that was read later; the gate was then 500 GETs "
        "(min_weight). 1,500 (shrink_min_weight, the evidence a shrink's curve needs) since 2026-12-04: a cache that "
        "hits nothing on the first pass of a loop longer than itself looks like one that holds a scan, and at 10 req/s "
        "500 GETs are five intervals (LIRS gli: the shrink dropped the data the loop's second pass read); adopted by "
        "the rule written in experiments/suite-audit-10.yaml before its run (docs/control.md). null = off"
    )
    free_shrink_min_intervals: int | None = Field(
        None, ge=1, description="free shrink (and free_shrink_blind) only once the cache in force has been full at its "
        "size and policy for at least this many intervals, whatever the request rate: free_shrink_min_gets counts "
        "GETs, so at 1,000 req/s its 1,500 are a fraction of one interval and the bound judges a cache by its first "
        "`confirm` full intervals, before data written at the start can be read again (ARC P3 with lognormal sizes at "
        "1,000 req/s, the twenty-seventh audit: 704 -> 305 MiB at interval 6, and the reads of intervals 13-26 missed "
        "what it dropped). 15 is what free_shrink_min_gets' 1,500 GETs are at 10 req/s, where that gate was found and "
        "confirmed (LIRS gli). Pre-registered 2026-12-06 and not adopted: on 84 fresh cells it changed 2 (4 for the "
        "policy's anchor), all a little dearer (docs/control.md). null = off (the GET count alone)"
    )
    free_shrink_full_at_size: bool = Field(
        False, description="free shrink's evidence (the hits of the cache in force) starts only once the cache has been "
        "full at the size the rule chose, not when it evicted behind a smaller limit in force: the fill cap outrun, or, "
        "in the env's anchor, a policy's smaller size. Such an interval measures the hits of a smaller cache, and the "
        "bound then weighs every byte of the chosen size against them. Found on the shipped policy's worst fresh cell of "
        "2026-12-06 (ARC P3 with 4 KiB values at 1,000 req/s, audit 33): one step below its anchor's capped 737 MiB "
        "evicted, the anchor counted that interval's few hits as its 1,711 MiB bet's, gave it back by free shrink to "
        "185 MiB two intervals later, and the reads that followed missed (+9.0 % against mrc's -1.2 %). Pre-registered "
        "twice on 2026-12-06 and not adopted: on 252 fresh cells it changed none of mrc's and 2 of the policy's, both a "
        "little dearer (docs/control.md). false = the rule before (any eviction starts the evidence)"
    )
    fill_headroom: float | None = Field(
        2.0, gt=0, description="while the cache is still filling (below the chosen size, not evicting), hold "
        "maxmemory at the bytes in use plus this many intervals of inserts (at least 10 % of the bytes in use): a "
        "cache that has not filled its limit hits as often as with any larger one, so the empty part is memory paid "
        "for nothing (cachetuner.mrc.fill). Only decide_after applies it (it needs the interval's metrics). null = off"
    )
    fill_pending_shrink_from_s: float | None = Field(
        57.0, gt=0, description="at decisions at least this many seconds apart, while a shrink the cost curve asks "
        "for waits for shrink_min_weight's evidence and the cache is still filling, the fill cap gives no headroom: "
        "maxmemory holds the bytes in use (never below the shrink's target), so no data is dropped and no memory is "
        "bought that the curve, ready at min_weight, predicts will not pay. Found at 300 s decisions: the first "
        "decision's curve wanted 47 MiB and the cap held 244 MiB for the cache's fill, 6.7 % of CloudPhysics' cost at "
        "`scaled` in one interval. At 10 and 30 s the evidence takes many intervals to arrive and a hold that long "
        "evicted loops' first passes on seen cells (LIRS cs +41 %), so it is bounded to long intervals; 57 is where "
        "`reference_interval_s: auto` counts in wall time (not tuned). Adopted 2026-12-07 by rule nine, written before its "
        "runs: on 88 fresh cells at 60-300 s mean regret -0.16 pp for mrc and the policy, 300 s -0.39 pp "
        "(docs/control.md). null = off (the cap's usual headroom)"
    )
    fill_amortized: bool = Field(
        True, description="the fill cap weighs the memory it holds back over payback_intervals intervals, not one, "
        "against the two config changes it costs: a cap set once holds while the cache fills, often for many "
        "intervals, and every other move of the rule (free growth's switch, a move's payback) is amortised over "
        "payback_intervals. One interval was a bar memory never cleared at cheap-backend prices (441 MiB held for "
        "an interval is worth less than a miss), so a cache filling 9 MiB of a 450 MiB limit paid for the whole "
        "limit for the whole trace (Corda: 1-2 % costlier than static-default on five audits). Lowering the limit on "
        "a swing of the insert rate (not the first reading, usage not falling) still needs one interval to pay. Adopted "
        "2026-12-04 by the rule written in experiments/suite-audit-12.yaml before its run (docs/control.md). False: "
        "the cap before (one interval everywhere)"
    )
    cold_growth: float | None = Field(
        1.25, gt=1, description="until the curves are first ready (min_weight) after the controller starts, and for at "
        "least confirm intervals (a curve one interval old holds no reuse longer than one interval), a cache that is "
        "full at the chosen size has the chosen size raised to this factor times the bytes in use plus the fill "
        "cap's headroom for inserts, instead of evicting; the fill cap keeps "
        "the limit at the bytes in use plus headroom, so it holds only what was inserted. Why: before the curves "
        "have evidence, every eviction drops data whose worth is unknown, and a young curve underrates large "
        "caches. Only while the cache pays for itself (its hits in the interval worth at least its memory): "
        "with a concave hit-ratio curve the next byte earns no more than the average byte, so a cache whose "
        "hits do not cover its memory has nothing to gain from growing. Needs fill_headroom. Once the curves are ready the rule decides from the grown size, and a shrink "
        "that keeps at least the size before the growth skips shrink_confirm (and shrink_min_weight too with "
        "cold_return_waits off): "
        "those bytes were never chosen on evidence, so taking them back is a return to the status quo, not a "
        "shrink of a proven cache; after the rule's first own move the gates hold again. Only at the start: "
        "after a shift-test restart the cache holds the old regime's data. "
        "null = off"
    )
    cold_growth_intervals: int | None = Field(
        10, ge=1, description="cold growth also after the curves are first ready, in the first this many intervals "
        "since the reset, when the rule itself keeps the size: a curve a few intervals old has seen no reuse longer "
        "than its age, so a full cache whose working set is still growing (a trace's warm-up) otherwise grows only as "
        "fast as its curve sees the reuse, a confirmed step at a time (orm-night from 3,588k with LLM sizes at 1,000 "
        "req/s: 64 MiB held through intervals 3-8 at a predicted saving under 1 %, where best-static holds 106). "
        "Adopted 2026-12-06 by the rule written before window audits 9 and 10 ran (docs/control.md). null = only while "
        "cold (the rule before)"
    )
    cold_growth_reach: float | None = Field(
        2.0, gt=0, description="cold growth's young window also lasts while the GETs seen since the reset are fewer "
        "than this many times the keys in the cache: a curve cannot hold a reuse longer than its history, and a full "
        "cache of K keys evicts what is next read about K requests later, so until the history is several times K the "
        "curve cannot tell whether a larger cache would pay (a working set that keeps growing). Counts requests, not "
        "intervals, so it means the same at any interval length. Found at 120 s decisions (ARC P2 with lognormal sizes "
        "at 30 req/s, `cheap-backend`): the window of cold_growth_intervals ended after one interval, the full cache "
        "held 957 MiB for 14 intervals while its data kept growing, and what it evicted was read again an hour later "
        "(regret 9.5 %). Pre-registered as rule ten with 2 (and the two settings below) and not adopted on 136 fresh "
        "cells: -0.4 pp at 60-300 s, +0.3 and +0.6 pp at 10 and 30 s, where a window that long let one paying interval "
        "of a mixed trace grow a cache that scans then filled (CloudPhysics at 100 req/s, 30 s: +12.8 pp; "
        "docs/control.md). Adopted 2026-12-08 with cold_growth_reach_from_s: 57 (rule eleven: on 88 fresh cells at 60-300 s "
        "-0.36 pp for the policy, -0.37 pp for mrc, every group cheaper). null = off (cold_growth_intervals alone)"
    )
    cold_growth_rebase: bool = Field(
        True, description="a cold growth after the curves are first ready (the young window) takes the size it grows "
        "from as the status quo that giving back cold growth's bytes returns to (cold_return_waits), instead of the "
        "size before the first cold growth: the rule held that size on ready curves, so it was chosen on evidence. "
        "Found with cold_growth_reach (LIRS ps with LLM sizes at 10 req/s, 30 s): ten intervals after the growth "
        "began, a return went all the way back to the 7 MiB the cache started with and lost its data (+6.4 %). Part "
        "of rule ten, not adopted, and of rule eleven, adopted (see cold_growth_reach). false = the size before the first "
        "cold growth"
    )
    cold_growth_heeds_optimum: bool = Field(
        True, description="in cold growth's young window (after the curves are first ready, within "
        "cold_growth_intervals), no growth once the curves hold shrink_min_weight's evidence and their optimum is at or "
        "below the size in force: a curve with a shrink's evidence that asks for less memory is not the young curve "
        "cold_growth_intervals guards against (one that has not yet seen the working set's reuse and asks for more). "
        "Found at 300 s decisions (web12 and LIRS sprite at `scaled`): the first decision grew 17 to 34 MiB and 25 to "
        "47 MiB while curves with 3,937 GETs of evidence put the optimum at 10 and 19 MiB. Part of rule ten, not "
        "adopted, and of rule eleven, adopted (see cold_growth_reach). false = the rule before"
    )
    cold_growth_reach_from_s: float | None = Field(
        57.0, gt=0, description="cold_growth_reach, cold_growth_rebase and cold_growth_heeds_optimum act only at "
        "decisions at least this many seconds apart (below, and when the interval is not known, the young window is "
        "cold_growth_intervals' alone, as before). Why: rule ten, the three together, took 0.26-0.43 pp off every "
        "group at 60, 120 and 300 s on 136 fresh cells and lost at 10 and 30 s, where a window by reach lasts many "
        "short intervals and gives a mixed trace many single paying intervals to grow on (CloudPhysics at 100 req/s, "
        "30 s: +12.8 pp). 57 is where `reference_interval_s: auto` counts in wall time, as for "
        "fill_pending_shrink_from_s (not tuned). Adopted 2026-12-08 by rule eleven, written before its runs: on 88 fresh "
        "cells at 60-300 s mean regret -0.36 pp for the policy and -0.37 pp for mrc, every interval's group cheaper "
        "(docs/control.md). null = at every interval (as rule ten tested it)"
    )
    cold_growth_heeds_weight: float | None = Field(
        None, gt=0, description="the evidence (sampled GETs) the curves must hold for cold_growth_heeds_optimum to heed "
        "their optimum; null = shrink_min_weight's (as rule ten tested it). A lead from rule ten's worst cell "
        "(CloudPhysics at 100 req/s, 30 s): its ready curves asked for 55-65 MiB against 94-192 MiB in force with "
        "500-800 sampled GETs of evidence, short of shrink_min_weight, so the guard never fired. Not tested on fresh "
        "cells"
    )
    cold_return_waits: bool = Field(
        True, description="giving back cold growth's bytes (a shrink that keeps at least the size before the growth) "
        "skips shrink_confirm but waits for shrink_min_weight's evidence like any other shrink: the young curve that "
        "asks for it underrates large caches as much as for any shrink (LIRS multi1 in the first audit: the bytes went "
        "back three intervals after the curves were first ready, just before the trace's loop repeated). Adopted "
        "2026-12-03 by the rule written in experiments/suite-audit-2.yaml before its run (docs/control.md). False: "
        "the rule before (the return skipped both gates)"
    )
    cold_free_growth: float | None = Field(
        0.25, ge=0, le=1, description="until the curves are first ready after the controller starts (as cold_growth), "
        "free growth grows to the largest allowed size when its extra memory (+ switch) costs at most this share of "
        "the misses' cost (free_growth's share applies once they are ready). Why: before the curves have evidence "
        "nothing can tell a scan from a loop longer than the window so far (LRU hits nothing on either until the "
        "loop repeats), and a cache that evicted the first pass pays a second one; this bets at most this share "
        "of the misses' cost per interval, only until the curves are ready, and the fill cap charges only the "
        "bytes actually filled. Giving the bytes back then follows the shrink gates. Needs fill_headroom. "
        "null = off"
    )
    size_shortfall: float | None = Field(
        0.05, ge=0, lt=1, description="the cost curve credits each size with the hits its curve predicts at (1 - this) "
        "times it, and charges the memory of the whole size: the rule asks a size to pay even if the cache holds this "
        "share less than the miniature cache standing for it. Why: a loop makes a cliff in the curve, and a cache "
        "chosen at the knee sits under it as soon as it holds a little less than predicted (Redis's fixed memory, "
        "per-key overhead and the sample's key sizes are estimates, and the 24-point grid interpolates across the "
        "knee); the loop's hits are lost while a few MiB more would have kept them (LIRS ps with 4 KiB values at 30 "
        "req/s: 12.x MiB chosen, the knee at 13, 250-280 hits of 300 an interval where 14 MiB hits all). On a smooth "
        "curve it moves the optimum up by about this share. Pre-registered alone at 0.05 on 2026-12-06 and not adopted: "
        "lower mean regret on every set measured (fresh 84 cells 0.93 -> 0.82 %, the ten suites 0.68 -> 0.60 %) but one "
        "more cell costlier than static-default on each; adopted the same day together with shrink_band_cap_misses 0.01 "
        "by the rule of audits 30-32 and window audits 24-26, written before they ran (126 fresh cells: mean regret "
        "1.215 -> 1.096 %, costlier than static-default 13 -> 11, worst 19.9 -> 18.1 %; docs/control.md). null = 0"
    )
    regrow_guard: bool = Field(
        True, description="no shrink to a size from which free growth would grow straight back at the run's usual "
        "miss level (the larger of the smoothed misses and their mean since the reset): such a shrink saves memory "
        "only while misses stay unusually low, and the move back costs a refill of what the shrink dropped (the "
        "third audit's ARC P2 cell at cheap-backend: +11.4 % -> -0.2 %). Adopted 2026-12-04 by the rule written in "
        "experiments/suite-audit-5.yaml before its run (docs/control.md). False: the rule before"
    )
    cold_memory_bound: float | None = Field(
        2.0, ge=1, description="in the cold phase (as cold_growth), once it has seen min_weight GETs, the chosen size is at "
        "most the smallest allowed size plus the memory worth this multiple of the mean interval's hits plus "
        "cold_free_growth's share of its misses' cost so far (never less than the bytes in use at the first fresh "
        "interval: a stale snapshot is not counted). Why: at the cost optimum the hits pay for the memory (else the smallest cache, which loses at most "
        "those hits, would be cheaper), so a cache whose hits come nowhere near covering its memory is too large "
        "whatever the curves will say once ready; a cache filled by writes that are seldom read (CloudPhysics with "
        "its real sizes: 3 % of reads hit) otherwise fills the whole default size before they are. The multiple (2) "
        "is for the hits a cache still filling has not made yet (written data read back later), the share for a loop "
        "longer than the window so far, which hits nothing on its first pass (cold free growth's bet). The evidence "
        "gate: a cache that has barely been read has not shown that it is worth nothing. The floor keeps what a live "
        "cache held when the controller started. Needs fill_headroom. null = off"
    )
    change_policy: bool = Field(True, description="also choose the eviction policy (else keep the current one)")
    policy_min_gain: float = Field(
        0.03, ge=0, le=1, description="a policy switch needs the other policy's predicted hit ratio at the target "
        "size to be this much higher: the curves' error of a policy *difference* is of the order of their "
        "per-curve error (bench mrc: 0.7-0.9 pp mean, up to 7 pp at one size), and a switched cache pays a transient the curves do not model "
        "(Redis reads the LRU clock bits of every existing key as LFU counters, and back)"
    )
    policy_sustained_gain: float | None = Field(
        0.01, ge=0, le=1, description="under a memory budget (the budget price regime), a smaller predicted gain "
        "also switches the policy once it has held at least this much for policy_patience intervals in a row: "
        "there the size is pinned at the cap and the policy is the lever, one large gap may be a young curve's "
        "noise but a lasting one is the workload (bench mrc: of predicted gaps >= 1 pp, 0.6 % point the wrong "
        "way), and without it a policy chosen for one phase is kept after the phase ends. With priced memory it "
        "lost on a held-out shifting workload (a switch combined with a shrink), so it is not used there. null = off"
    )
    policy_patience: int = Field(
        24, ge=1, description="intervals in a row a gain of policy_sustained_gain must hold (3 x shrink_confirm)"
    )
    budget_policy_gain: float | None = Field(
        0.01, ge=0, le=1, description="under a memory budget (the budget price regime), in the first "
        "budget_quick_intervals intervals: a policy switch needs this predicted hit-ratio gain, confirmed for confirm "
        "intervals, instead of policy_min_gain. Why: there the policy is the only lever and no size moves with it, and "
        "hill-climb, which switches on a 1 pp margin as soon as its curves exist, was the cheapest controller on the "
        "budget audits (docs/control.md). Adopted 2026-12-05 with budget_quick_intervals by a rule written before "
        "budget audits 6 and 7 ran. null = policy_min_gain throughout"
    )
    budget_min_weight: float | None = Field(
        100.0, ge=0, description="under a memory budget, in the first budget_quick_intervals intervals: the evidence "
        "(windowed GETs every curve point accounts for) the rule waits for before deciding, instead of min_weight (the "
        "cold phase still ends on min_weight). null = min_weight throughout"
    )
    budget_quick_intervals: int | None = Field(
        30, ge=0, description="under a memory budget: budget_policy_gain and budget_min_weight apply only in the first "
        "this many intervals since the reset (30: payback_intervals), then the 3 pp gate (or policy_sustained_gain "
        "held for policy_patience) as with priced memory. Why: a young cache holds few keys with much recency or "
        "frequency, so its switch costs little transient; the quicker gates applied throughout made more cells "
        "costlier than static-default (switches of a warm cache that did not repay). null: always"
    )
    budget_quick_confirm: int | None = Field(
        None, ge=1, description="under a memory budget, in the first budget_quick_intervals intervals: a policy-only "
        "switch needs its target to win this many intervals in a row instead of confirm. null = confirm"
    )
    budget_switch_transient: bool = Field(
        False, description="under a memory budget: a policy switch must also repay, within payback_intervals, the "
        "transient it causes: Redis keeps each key's 24-bit lru field across a switch and reads it under the new policy "
        "(after LRU -> LFU the warm keys look cold and go first), estimated as half the cache's objects times the hit "
        "ratio in force, one miss each. A switch while the cache is still filling is cheap, a switch of a full warm "
        "cache dear. Needs the interval's metrics (decide_after). False = off"
    )
    reference_interval_s: ReferenceInterval = Field(
        "auto", description="the interval length the interval-counted settings are counted at (every measurement of "
        "the rule was made at 10 s). At another interval they are scaled to the same wall-clock time (scaled_to): the "
        "counts (confirm, shrink_confirm, shrink_patience, payback_intervals, cold_growth_intervals, policy_patience, "
        "budget_quick_intervals, budget_quick_confirm, free_shrink_min_intervals) by reference/interval, rounded, at "
        "least 1, and the EWMA weights (gets_smoothing, gets_floor_smoothing) to the same decay per second. Why: at 60 s "
        "the counts as given made the rule six times slower in wall time while each interval's bets cost six times "
        "as much (the default suite: 15.0 % mean regret at 60 s against 0.1-0.3 % at 10 s; four long traces at 60 s: "
        "2.5 % -> 1.2 % with the counts scaled, 1.4 % at 10 s; docs/control.md). fill_headroom stays in intervals: it "
        "covers the inserts until the next decision. Within 5 % of the reference (a live interval of 10.02 s) the "
        "counts are as given. Not adopted by the rule written before interval audits 1-4 ran (2026-12-07): on their 76 "
        "fresh cells at 30-60 s the mean fell 2.49 -> 1.85 %, but 25 cells were dearer, one by 26 pp, and the 95 % "
        "interval of the difference reached +0.87 pp; nor, with the curves' short window floored "
        "(mrc.short_window_min_requests), by the rule written before interval audits 9-12 ran: 2.90 -> 2.17 %, bound "
        "+0.87 pp again (docs/control.md). With the floor the default, rule four (interval audits 17-22) found it "
        "cheaper at 60 s (3.68 -> 1.67 %) and dearer at 30 s; rule five (interval audits 23-28) cheaper at 60 and 120 s "
        "(4.25 -> 1.50 %) and rule six at 300 s (13.4 -> 3.0 %). auto (the default): 10 at decisions 57 s or more "
        "apart, as given below (resolve_reference). null = as given at any interval"
    )
    knobs: bool = Field(
        False, description="under a memory budget, when the curves carry eviction-knob variants (mrc.knob_variants): "
        "choose the policy and its knobs together, as arms at the cap, by the policy rule's gains (policy_min_gain "
        "confirmed for confirm intervals, or policy_sustained_gain held for policy_patience); the size rule keeps the "
        "policy in force (cachetuner.mrc.knobs). False: the knobs stay the base config's"
    )

    def scaled_to(self, interval_s: float) -> MRCControlSettings:
        """These settings for decisions ``interval_s`` apart (see ``reference_interval_s``); ``self`` when they need
        no scaling."""
        ref = reference_in_force(self.reference_interval_s, interval_s)
        if ref is None or interval_s <= 0:
            return self
        k = ref / interval_s

        def count(n: float | None) -> int | None:
            return None if n is None else 0 if n == 0 else max(1, round(n * k))

        def weight(w: float | None) -> float | None:
            return None if w is None else min(1.0, 1.0 - (1.0 - w) ** (1.0 / k))

        payback = max(1.0, self.payback_min_intervals or 1.0, self.payback_intervals * k)
        return self.model_copy(update={
            "confirm": count(self.confirm), "shrink_confirm": count(self.shrink_confirm),
            "shrink_patience": count(self.shrink_patience),
            "payback_intervals": payback, "cold_growth_intervals": count(self.cold_growth_intervals),
            "policy_patience": count(self.policy_patience), "budget_quick_intervals": count(self.budget_quick_intervals),
            "budget_quick_confirm": count(self.budget_quick_confirm),
            "free_shrink_min_intervals": count(self.free_shrink_min_intervals),
            "gets_smoothing": weight(self.gets_smoothing), "gets_floor_smoothing": weight(self.gets_floor_smoothing),
        })


#: intervals within this share of ``reference_interval_s`` count as the reference (no scaling)
_SAME_INTERVAL = 0.05

#: the decision interval every measurement of the rule (and of the shipped policy around it) was made at
MEASURED_INTERVAL_S = 10.0


def same_interval(interval_s: float, reference_s: float) -> bool:
    """Whether decisions ``interval_s`` apart count as ``reference_s`` apart (within 5 %: a live interval of 10.02 s)."""
    return abs(interval_s / reference_s - 1.0) <= _SAME_INTERVAL


#: ``reference_interval_s: auto`` counts in wall time from this interval on: 60 s, less the 5 % a live interval may
#: drift. Adopted by rule five (docs/control.md: cheaper on fresh interval audits at 60 and 120 s) and kept unbounded
#: by rule six (300 s; not measured beyond); at 30 s it was dearer (rule four), so below this auto counts per interval
AUTO_WALL_TIME_FROM_S = 57.0


def resolve_reference(setting: ReferenceInterval, interval_s: float) -> float | None:
    """The reference a ``reference_interval_s`` setting means at decisions ``interval_s`` apart: a number as given,
    None as None (per interval), ``auto`` the measured 10 s from :data:`AUTO_WALL_TIME_FROM_S` on and None below."""
    if setting != "auto":
        return None if setting is None else float(setting)
    return MEASURED_INTERVAL_S if interval_s >= AUTO_WALL_TIME_FROM_S else None


def reference_in_force(setting: ReferenceInterval, interval_s: float) -> float | None:
    """The reference the counts are scaled to at decisions ``interval_s`` apart: :func:`resolve_reference`'s, or None
    where they stay as given (per interval, or an interval within 5 % of the reference)."""
    ref = resolve_reference(setting, interval_s)
    return None if ref is None or same_interval(interval_s, ref) else ref


__all__ = ["AUTO_WALL_TIME_FROM_S", "MEASURED_INTERVAL_S", "MRCControlSettings", "ReferenceInterval", "check_reference",
           "reference_in_force", "resolve_reference", "same_interval"]
