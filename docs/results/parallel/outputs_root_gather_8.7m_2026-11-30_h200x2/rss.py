"""`gpusolver ARGS` with this rank's peak resident memory printed at exit."""
import atexit
import os
import resource
import runpy
import sys

atexit.register(lambda: print(f"rank {os.environ.get('PMI_RANK', '0')} peak RSS "
                              f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6:.2f} GB",
                              file=sys.stderr, flush=True))
sys.argv = ["gpusolver", *sys.argv[1:]]
runpy.run_module("gpusolver", run_name="__main__", alter_sys=True)
