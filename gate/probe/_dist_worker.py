"""torchrun worker for step 10: FSDP2 (fully_shard) over gloo on CPU, one step, then a sharded DCP checkpoint saved,
loaded into a differently initialised copy and compared. Run as
`torchrun --nproc-per-node 2 -m gate.probe._dist_worker MODEL SPEC|- BATCH CKPT OUT`."""

from __future__ import annotations

import json
import os
import sys
from typing import Any


def _wrap(model: Any, mesh: Any) -> Any:
    from torch.distributed.fsdp import fully_shard

    for layer in model.get_decoder().layers if hasattr(model, "get_decoder") else []:
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model


def _full(params: dict[str, Any]) -> dict[str, Any]:
    return {n: (p.full_tensor() if hasattr(p, "full_tensor") else p).detach().clone() for n, p in params.items()}


def main(argv: list[str]) -> int:
    model_dir, spec_path, batch_path, ckpt, out = argv
    import torch
    import torch.distributed as dist
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
    from torch.distributed.device_mesh import init_device_mesh

    from gate.probe.model import load_model, optimizer_for, trainable
    from gate.probe.spec import load_spec

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    mesh = init_device_mesh("cpu", (world,))
    spec = None if spec_path == "-" else load_spec(spec_path)
    batch = torch.load(batch_path)
    mine = {k: v[rank::world] for k, v in batch.items()}
    model = _wrap(load_model(model_dir, spec, seed=0), mesh)
    opt = optimizer_for(model)
    model.train()
    loss = model(**mine).loss
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    losses = [None] * world
    dist.all_gather_object(losses, float(loss.detach()))
    ref = _full(trainable(model))
    sharded = sum(1 for p in trainable(model).values() if hasattr(p, "full_tensor"))
    msd, osd = get_state_dict(model, opt)
    dcp.save({"model": msd, "optim": osd}, checkpoint_id=ckpt)

    model2 = _wrap(load_model(model_dir, spec, seed=4321), mesh)
    opt2 = optimizer_for(model2)
    msd2, osd2 = get_state_dict(model2, opt2)
    state = {"model": msd2, "optim": osd2}
    dcp.load(state, checkpoint_id=ckpt)
    set_state_dict(model2, opt2, model_state_dict=state["model"], optim_state_dict=state["optim"])
    got = _full(trainable(model2))
    diff = max(float((ref[n] - got[n]).abs().max()) for n in ref)
    steps = {int(s["step"]) for s in opt2.state.values() if "step" in s}
    if rank == 0:
        files = sorted(os.listdir(ckpt))
        with open(out, "w", encoding="utf-8") as fh:
            json.dump({"world": world, "strategy": "fsdp2", "losses": losses, "max_param_abs_diff": diff,
                       "sharded_tensors": sharded, "trainable_tensors": len(ref), "files": files,
                       "optimizer_steps": sorted(steps)}, fh)
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
