"""The packaged UCR benchmark configs (tsrep/configs/ucr-dev.yaml, ucr.yaml, ucr-holdout.yaml,
ucr-offpanel.yaml, ucr-dev47.yaml) load and validate (no training)."""

from tsrep.benchmarks import load_config
from tsrep.benchmarks.published import published_results
from tsrep.data import list_datasets, load_archive

#: The problems of ucr-offpanel.yaml whose series are of unequal length (no published figures).
UNEQUAL_LENGTH = ["AllGestureWiimoteX", "AllGestureWiimoteY", "AllGestureWiimoteZ", "GestureMidAirD1",
                  "GestureMidAirD2", "GestureMidAirD3", "GesturePebbleZ1", "GesturePebbleZ2"]


def test_ucr_configs_load_and_validate():
    dev = load_config("ucr-dev")
    assert dev.datasets == ["ArrowHead", "GunPoint", "ItalyPowerDemand", "OSULeaf", "Coffee", "Beef", "FaceFour",
                            "Lightning7", "Ham", "Adiac", "ECG5000", "DistalPhalanxTW"]
    assert dev.models == ["ea-dc-transformer", "dc-transformer", "resnet", "transformer", "aeon:minirocket"]
    assert dev.seeds == [0, 1, 2] and not dev.params and not dev.model_params and not dev.grid
    assert all(dev.params_for(m, d) == {} for m in dev.models for d in dev.datasets)  # estimator defaults
    assert dev.published == ["MiniROCKET", "MultiROCKET-Hydra", "HC2", "InceptionTime", "ResNet"]
    assert dev.published_split == "fold0" and dev.published_in_ranks is False
    full = load_config("ucr")
    assert full.datasets == list_datasets("ucr", available_offline=True) and len(full.datasets) >= 90
    assert full.models == dev.models and full.seeds == [0] and full.published == dev.published


def test_holdout_config_is_off_the_panel_and_has_published_columns():
    dev, holdout = load_config("ucr-dev"), load_config("ucr-holdout")
    assert len(holdout.datasets) == 12 and not set(holdout.datasets) & set(dev.datasets)
    assert set(holdout.datasets) <= set(published_results("classification").index)  # every row gets its columns
    assert holdout.models == ["ea-dc-transformer", "aeon:minirocket"] and holdout.seeds == [0, 1]
    assert not holdout.params and not holdout.model_params and not holdout.grid  # the defaults, as on the panel
    assert holdout.published == dev.published and holdout.published_split == "fold0"


def test_offpanel_config_is_off_both_panels_and_on_disk():
    dev, holdout, offpanel = load_config("ucr-dev"), load_config("ucr-holdout"), load_config("ucr-offpanel")
    assert len(offpanel.datasets) == 35 == len(set(offpanel.datasets))
    assert not set(offpanel.datasets) & (set(dev.datasets) | set(holdout.datasets))
    assert set(offpanel.datasets) <= set(list_datasets("ucr", available_offline=True))
    assert offpanel.models == ["ea-dc-transformer", "resnet", "aeon:minirocket"] and offpanel.seeds == [0]
    assert not offpanel.params and not offpanel.model_params and not offpanel.grid  # the defaults
    assert offpanel.published == dev.published and offpanel.published_split == "fold0"


def test_small_config_is_off_the_47_and_the_holdout_and_split_at_32_cases():
    dev47, holdout, small = load_config("ucr-dev47"), load_config("ucr-holdout"), load_config("ucr-small")
    assert len(small.datasets) == 11 == len(set(small.datasets))
    assert not set(small.datasets) & (set(dev47.datasets) | set(holdout.datasets))
    assert set(small.datasets) <= set(list_datasets("ucr", available_offline=True))
    assert small.models == ["ea-dc-transformer", "aeon:minirocket"] and small.seeds == [0, 1, 2]
    assert not small.params and not small.model_params and not small.grid  # the defaults
    below, above = small.groups["below 32 cases"], small.groups["32 cases or more"]
    assert sorted(below + above) == sorted(small.datasets)
    sizes = {name: len(load_archive(name, "train", offline=True)[1]) for name in small.datasets}
    assert all(sizes[d] < 32 for d in below) and all(32 <= sizes[d] <= 55 for d in above)


def _series_lengths(name: str) -> set[int]:
    """The lengths of a problem's series on disk, TRAIN and TEST (a list of arrays where they differ)."""
    lengths = set()
    for split in ("train", "test"):
        X, _ = load_archive(name, split, offline=True)
        lengths |= {x.shape[-1] for x in X} if isinstance(X, list) else {X.shape[-1]}
    return lengths


def test_dev47_config_is_the_panel_and_the_offpanel_with_their_groups():
    dev, offpanel, dev47 = load_config("ucr-dev"), load_config("ucr-offpanel"), load_config("ucr-dev47")
    assert dev47.datasets == dev.datasets + offpanel.datasets and len(set(dev47.datasets)) == 47
    assert set(dev47.datasets) <= set(list_datasets("ucr", available_offline=True))  # on disk: offline runs
    assert dev47.models == ["ea-dc-transformer", "aeon:minirocket"] and dev47.seeds == [0, 1, 2]
    assert not dev47.params and not dev47.model_params and not dev47.grid  # the defaults, as on the panel
    assert dev47.published == dev.published and dev47.published_split == "fold0" and not dev47.published_in_ranks
    assert dev47.offline is True
    # A candidate default as a variant that runs only when named (--models): the default's cells stay as they are.
    assert dev47.variants["ea-dc-t-inception"].params == {"stem_kind": "inception", "stem_skip": True}
    assert dev47.base_model("ea-dc-t-inception") == "ea-dc-transformer"
    assert list(dev47.groups) == ["panel", "off-panel", "off-panel equal-length"]
    assert dev47.groups["panel"] == dev.datasets and dev47.groups["off-panel"] == offpanel.datasets
    equal = dev47.groups["off-panel equal-length"]
    assert equal == [d for d in offpanel.datasets if d not in UNEQUAL_LENGTH] and len(equal) == 27
    # The partition as the data on disk has it: one length in every problem of the group, several in the others.
    assert all(len(_series_lengths(d)) == 1 for d in equal)
    assert all(len(_series_lengths(d)) > 1 for d in UNEQUAL_LENGTH)
    # Every problem of these two groups has every published column (their rows average the same problems).
    published = published_results("classification", split="fold0", methods=dev47.published)
    assert published.reindex(dev47.groups["panel"] + equal).notna().all().all()
