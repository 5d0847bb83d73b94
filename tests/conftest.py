import pytest
import torch


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """Tiny test models run faster on one thread, and the suite stays fast when other work shares the cores."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


def pytest_collection_modifyitems(config, items):
    # sklearn's array-API check only skips itself unless SCIPY_ARRAY_API is set; tsrep declares no
    # array-API support, so the check is not collected rather than reported as a skip.
    items[:] = [item for item in items if "check_array_api_input" not in item.nodeid]
