"""Structure-analysis CPU time on a model (whole graph and windows of 64..512 ops) and each
window's agreement with the whole graph, at levels 1 and 2 (best of 5 each).

    python benchmarks/analysis_window_time.py zoo:bert_large OUT.json
"""

import json
import sys
import time

from xdsl.context import Context

from autofusion.analysis.hardware import cpu_this_machine
from autofusion.analysis.structure import agreement, find_clusters
from autofusion.api import import_model, open_model
from autofusion.passes import get_all_passes
from autofusion.passes.fuse import Decision
from autofusion.policy.engine import FusionPolicy
from autofusion.policy.reasons import RefusalLog
from autofusion.tools.analysis_report import RECOGNITION_PASSES

module = import_model(open_model(sys.argv[1]))
for n in RECOGNITION_PASSES:
    get_all_passes()[n]()().apply(Context(), module)
f = next(iter(module.ops))
ops = [o for o in f.regions[0].block.ops if o.name != "func.return"]
out = {"ops": len(ops)}
for level in (1, 2):
    pol = FusionPolicy.resolve(None, level)
    whole = None
    for w in (0, 64, 128, 256, 512):
        best = 9e9
        res = None
        for _ in range(5):
            t = time.process_time()
            res = find_clusters(
                ops,
                Decision(pol, cpu_this_machine()),
                RefusalLog(),
                allow_recompute=level >= 2,
                window_size=w,
            )
            best = min(best, time.process_time() - t)
        if w == 0:
            whole = res
        a = agreement(whole, res)
        out[f"L{level} w{w}"] = [
            round(best, 4),
            len(res.partition()),
            round(a["exact_kernel_agreement"], 3),
            round(a["op_agreement"], 3),
        ]
        print(f"L{level} w{w}", out[f"L{level} w{w}"], flush=True)
json.dump(out, open(sys.argv[2], "w"))
