"""Full-range miss-ratio curves (SHARDS miniature simulations) for cost-optimal sizing."""

from cachetuner.mrc.config import MRCConfig
from cachetuner.mrc.cost import CostCurve, Prices, cost_curve
from cachetuner.mrc.curves import MissRatioCurves, isotonic
from cachetuner.mrc.estimator import MRCEstimator, mini_params

__all__ = ["CostCurve", "Prices", "cost_curve", "MRCConfig", "MRCEstimator", "MissRatioCurves", "isotonic", "mini_params"]
