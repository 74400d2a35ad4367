"""LocalIds: the dense key numbering shared by the curve estimator, the what-if features and the
shadow A/B minis."""

from __future__ import annotations

import numpy as np

from cachetuner.keysample import LocalIds


def test_new_keys_get_the_next_ids_in_sorted_order_and_repeats_map_to_the_same_id() -> None:
    ids = LocalIds(start=10)
    keys = np.array([900, 5, 900, 77], dtype=np.int64)
    new = ids.unseen(keys)
    assert new.tolist() == [5, 77, 900]
    assert ids.add(new).tolist() == [10, 11, 12]
    assert ids.lookup(keys).tolist() == [12, 10, 12, 11]
    # a second batch: only the unseen key gets an id, after the others
    more = np.array([77, 3, 5], dtype=np.int64)
    assert ids.unseen(more).tolist() == [3]
    ids.add(ids.unseen(more))
    assert ids.lookup(more).tolist() == [11, 13, 10]
    assert len(ids) == 4 and ids.next_id == 14


def test_copy_is_independent() -> None:
    a = LocalIds()
    a.add(a.unseen(np.array([4, 2], dtype=np.int64)))
    b = a.copy()
    b.add(b.unseen(np.array([9], dtype=np.int64)))
    assert len(a) == 2 and len(b) == 3
    assert a.unseen(np.array([9], dtype=np.int64)).tolist() == [9]
    assert b.lookup(np.array([2, 4, 9], dtype=np.int64)).tolist() == [0, 1, 2]
