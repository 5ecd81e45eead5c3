"""Child process for step 7; `save` trains one step, checkpoints, computes the reference next step and waits to be
killed; `resume` starts clean from the checkpoint alone and takes that next step. Run as
`python -m gate.probe._resume_child MODE MODEL SPEC|- BATCH CKPT OUT`."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    mode, model_dir, spec_path, batch_path, ckpt, out = argv
    import torch

    from gate.io.atomic import atomic_dir
    from gate.probe.model import load_model, optimizer_for, train_step, trainable
    from gate.probe.spec import load_spec

    spec = None if spec_path == "-" else load_spec(spec_path)
    batch = torch.load(batch_path)
    # the resumed process starts from a different adapter init: only the checkpoint can make it match
    model = load_model(model_dir, spec, seed=0 if mode == "save" else 1234)
    opt = optimizer_for(model)
    if mode == "save":
        torch.manual_seed(7)
        loss1 = train_step(model, opt, batch)
        with atomic_dir(ckpt) as tmp:
            torch.save({n: p.detach() for n, p in trainable(model).items()}, tmp / "trainable.pt")
            torch.save(opt.state_dict(), tmp / "optimizer.pt")
            torch.save(torch.get_rng_state(), tmp / "rng.pt")
            (tmp / "trainer_state.json").write_text(json.dumps({"step": 1, "loss": loss1}))
        loss2 = train_step(model, opt, batch)
        torch.save({"loss": loss2, "params": {n: p.detach() for n, p in trainable(model).items()}}, out)
        print("READY", flush=True)
        sys.stdin.read()  # the parent kills this process: nothing after the checkpoint may leak into the resume
        return 0
    saved = torch.load(Path(ckpt) / "trainable.pt")
    params = trainable(model)
    if set(saved) != set(params):
        print(json.dumps({"error": f"checkpoint names differ: {sorted(set(saved) ^ set(params))[:3]}"}))
        return 1
    with torch.no_grad():
        for n, p in params.items():
            p.copy_(saved[n])
    opt.load_state_dict(torch.load(Path(ckpt) / "optimizer.pt"))
    torch.set_rng_state(torch.load(Path(ckpt) / "rng.pt"))
    state = json.loads((Path(ckpt) / "trainer_state.json").read_text())
    loss2 = train_step(model, opt, batch)
    torch.save({"loss": loss2, "step": state["step"] + 1,
                "params": {n: p.detach() for n, p in trainable(model).items()}}, out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
