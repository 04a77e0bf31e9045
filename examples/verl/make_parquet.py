"""Turn a `prove-gym synth` output folder into verl's parquet files.

    python examples/verl/make_parquet.py data/ data/verl/

Rows: `prompt` (the first user turn), `agent_name` ("prove_agent"), `data_source`, and the
task JSON under `extra_info.task` (what the agent loop plays). Needs `datasets` or `pandas`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from prove_gym.adapters.verl import verl_rows
from prove_gym.task import load_tasks


def main() -> None:
    src, out = Path(sys.argv[1]), Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    import pandas as pd

    for split in ("train", "test"):
        rows = verl_rows(load_tasks(src / f"{split}.jsonl"))
        pd.DataFrame(rows).to_parquet(out / f"{split}.parquet")
        print(f"{out / f'{split}.parquet'}: {len(rows)} rows")


if __name__ == "__main__":
    main()
