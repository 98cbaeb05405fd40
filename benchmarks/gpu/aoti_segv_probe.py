"""Bisect an AOTI load segfault seen on torch 2.11 (GPU host): tiny model, with and without
package metadata, each loaded in a fresh process with faulthandler on."""
import faulthandler, json, os, subprocess, sys, tempfile, time
import torch

faulthandler.enable()
mode = sys.argv[1] if len(sys.argv) > 1 else "driver"
if mode == "load":
    faulthandler.enable(all_threads=True)
    t0 = time.time()
    m = torch._inductor.aoti_load_package(sys.argv[2])
    print("loaded", time.time() - t0, flush=True)
    x = torch.randn(4, 16, device=sys.argv[3])
    print("ran", m(x).shape, flush=True)
    sys.exit(0)

class M(torch.nn.Module):
    def __init__(self):
        super().__init__(); self.l = torch.nn.Linear(16, 8)
    def forward(self, x):
        return self.l(x).softmax(-1)

tmp = tempfile.mkdtemp()
for device in ("cpu",):
    m = M().to(device).eval()
    x = torch.randn(4, 16, device=device)
    ep = torch.export.export(m, (x,), dynamic_shapes={"x": {0: torch.export.Dim("b", min=2, max=64)}})
    for meta in (False, True):
        path = os.path.join(tmp, f"{device}-{meta}.pt2")
        cfg = {"aot_inductor.metadata": {"laya.input_spec": json.dumps({"inputs": [{"name": "x", "dims": [{"min": 2}]}]}), "laya.key": "abc"}} if meta else {}
        t0 = time.time()
        torch._inductor.aoti_compile_and_package(ep, package_path=path, inductor_configs=cfg)
        print(device, "meta" if meta else "plain", "packaged", round(time.time() - t0, 1), flush=True)
        p = subprocess.run([sys.executable, __file__, "load", path, device], capture_output=True, text=True)
        print(device, "meta" if meta else "plain", "fresh load rc", p.returncode)
        print("\n".join(l for l in (p.stdout + p.stderr).splitlines() if not l.startswith("Extension modules"))[-3000:], flush=True)
