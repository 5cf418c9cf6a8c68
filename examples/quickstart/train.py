# A training program sfsweep can sweep: its parameters come as flags, it appends a JSON line
# of metrics per evaluation to $SFSWEEP_METRICS and resumes from $SFSWEEP_CHECKPOINT_DIR.
# Here it fits y = 3x + noise by SGD with momentum; put your model in its place.
import argparse, json, os, random, sys

p = argparse.ArgumentParser()
p.add_argument("--lr", type=float, required=True)
p.add_argument("--momentum", type=float, default=0.9)
args = p.parse_args()                                  # --lr=0.03 --momentum=0.9
steps, seed = int(os.environ["SFSWEEP_STEPS"]), int(os.environ["SFSWEEP_SEED"])
ckpt = os.path.join(os.environ["SFSWEEP_CHECKPOINT_DIR"], "latest.json")
s = json.load(open(ckpt)) if os.path.exists(ckpt) else {"step": 0, "w": 0.0, "m": 0.0}
with open(os.environ["SFSWEEP_METRICS"], "a") as metrics:
    for step in range(s["step"] + 1, steps + 1):
        r = random.Random(f"{seed}-{step}")               # the step's batch, (x, y)
        x = r.gauss(0, 1)
        y = 3 * x + 0.5 * r.gauss(0, 1)
        g = 2 * (s["w"] * x - y) * x                     # the gradient of (w·x − y)²
        s["m"] = args.momentum * s["m"] + g
        s["w"] -= args.lr * s["m"]
        s["step"] = step
        loss = (s["w"] - 3) ** 2 + 0.25                  # the expected loss on new samples
        if not loss < 1e6:
            sys.exit(3)                                  # diverged: a result, not retried
        if step % 20 == 0 or step == steps:
            print(json.dumps({"step": step, "val_loss": loss}), file=metrics, flush=True)
            with open(ckpt + ".tmp", "w") as f:          # the line first, then the checkpoint
                json.dump(s, f)
            os.replace(ckpt + ".tmp", ckpt)
