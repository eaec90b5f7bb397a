"""A deletion vector whose file carries Delta Spark's test-only name prefix is not resolved by guessing.

``delta/table-with-dv-small-cm`` names its DV ``{"storageType": "u", "pathOrInlineDv": "WYbkwCTB$gH)J7t?$/sK"}``:
20 characters, the Z85 form of a UUID with no random prefix (PROTOCOL.md "Deletion Vector Descriptor Format"),
so the file is ``<table>/deletion_vector_<uuid>.bin``. The file upstream shipped is
``test%dv%prefix-deletion_vector_<uuid>.bin``: Delta Spark's tests add that prefix to the file name only
(``DeltaSQLConf.TEST_DV_NAME_PREFIX`` under ``Utils.isTesting``), never to the descriptor, so nothing in the log
leads to it. A reader that looked for it anyway would read a file VACUUM deletes as unreferenced
(tests/integration/test_vacuum.py), and would disagree with both peers. Every reader here names the same
missing file.
"""

from __future__ import annotations

import pytest

from deltalog import DeltaLog
from deltalog.errors import CorruptDataError
from tests.corpus import corpus_entries, table_path
from tests.peers import try_deltalake, try_duckdb

NAME = "delta/table-with-dv-small-cm"
UUID_NAME = "deletion_vector_b6a98cdd-7843-470d-8897-708cdffa38c5.bin"

PRESENT = [e["name"] for e in corpus_entries() if e["name"] == NAME]


@pytest.mark.corpus
@pytest.mark.parametrize("name", PRESENT)
def test_the_protocol_path_is_the_one_every_reader_looks_for(name: str) -> None:
    root = table_path(name)
    assert (root / f"test%dv%prefix-{UUID_NAME}").is_file() and not (root / UUID_NAME).exists()
    (add,) = DeltaLog.for_table(root).snapshot().add_actions()
    assert add.deletion_vector is not None and len(add.deletion_vector.path_or_inline_dv) == 20  # no prefix

    with pytest.raises(CorruptDataError, match="does not exist") as exc:
        DeltaLog.for_table(root).snapshot().to_arrow()
    assert exc.value.path == UUID_NAME

    for refusal in (try_deltalake(root), try_duckdb(root)):
        assert isinstance(refusal, str) and UUID_NAME in refusal and "prefix" not in refusal
