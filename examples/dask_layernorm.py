"""A jitted layernorm over a chunked dask array, on a local cluster of worker processes.

python examples/dask_layernorm.py        (pip install -e ".[dask]" first)
"""

import numpy as np

import jitc


@jitc.jit
def layernorm(x, g, b):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5) * g + b


def main(rows=2**16, n_workers=2):
    import dask.array as da
    from distributed import Client, LocalCluster

    x = da.random.default_rng(0).standard_normal(
        (rows, 512), chunks=(rows // 8, 512), dtype=np.float32
    )
    g = np.linspace(0.5, 1.5, 512, dtype=np.float32)
    b = np.linspace(-1, 1, 512, dtype=np.float32)
    y = layernorm(x, g, b)  # lazy: nothing runs yet
    print(layernorm.lower(x, g, b).as_text().split("\n\n")[0])
    with (
        LocalCluster(
            n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster),
    ):
        got, xs = da.compute(y.sum(axis=0), x)
    want = layernorm.fun(xs, g, b).sum(axis=0)  # the same function run by NumPy
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-2)
    print(f"layernorm on {n_workers} workers matches NumPy, column sums {got[:3]}")


if __name__ == "__main__":  # worker processes import this file: start the cluster once
    main()
