"""The packaged UCR benchmark configs (tsrep/configs/ucr-dev.yaml, ucr.yaml, ucr-holdout.yaml,
ucr-offpanel.yaml) load and validate (no training)."""

from tsrep.benchmarks import load_config
from tsrep.benchmarks.published import published_results
from tsrep.data import list_datasets


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
