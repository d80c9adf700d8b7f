"""Many submissions at once: where the engine's jobs run.

`runner` hands jobs to a pool of worker processes on this machine and retries a job whose
process stopped; `dask_cluster` runs them as tasks on a Dask cluster (`dask_local`: a
scheduler and workers on this machine; `certs`: the certificates that admit the cluster's
machines, and nobody else). They know jobs and results, not the class folder.
"""
