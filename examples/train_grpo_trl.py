"""Train a tool-calling policy on veritask tasks with TRL's GRPOTrainer.

Every rollout gets its own isolated veritask environment (TRL's ``environment_factory``): the
model calls the domain's tools, and the episode is rewarded by veritask's verifier (1.0 when
the final database state equals the task's certified target state), optionally shaped by state
proximity and a penalty for rule violations.

    pip install 'veritask[trl]'            # trl, transformers, datasets (torch: your build)
    veritask generate --domain travel --n 200 --seed 7 --out tasks/travel
    python examples/train_grpo_trl.py --dataset tasks/travel --model Qwen/Qwen3-0.6B

Use a chat model whose template TRL knows for tool calling (Qwen3, Qwen2.5, Llama 3.x, ...).
"""

from __future__ import annotations

import argparse
import os


def main() -> None:
    """Parse the arguments and train."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", required=True, help="veritask dataset directory")
    parser.add_argument("--model", default="Qwen/Qwen3-0.6B", help="model id or local path")
    parser.add_argument("--output-dir", default="out/grpo-veritask")
    parser.add_argument("--max-steps", type=int, default=200)
    parser.add_argument("--num-generations", type=int, default=8, help="GRPO group size")
    parser.add_argument("--batch-size", type=int, default=8, help="per-device train batch size")
    parser.add_argument("--max-completion-length", type=int, default=2048)
    parser.add_argument("--max-tool-calls", type=int, default=30, help="tool rounds per rollout")
    parser.add_argument("--learning-rate", type=float, default=1e-6)
    parser.add_argument("--proximity-weight", type=float, default=0.1)
    parser.add_argument("--violation-weight", type=float, default=0.05)
    parser.add_argument("--use-vllm", action="store_true", help="generate with vLLM (colocate)")
    args = parser.parse_args()

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # environment_factory is experimental
    import torch
    from trl import GRPOConfig, GRPOTrainer

    from veritask.integrations.trl import (
        build_grpo_dataset,
        make_environment_class,
        proximity_reward,
        violation_penalty,
    )

    environment = make_environment_class(args.dataset)
    train_dataset = build_grpo_dataset(args.dataset)
    print(f"{len(train_dataset)} tasks, domain {environment.domain}")

    config = GRPOConfig(
        output_dir=args.output_dir,
        max_steps=args.max_steps,
        num_generations=args.num_generations,
        per_device_train_batch_size=args.batch_size,
        max_completion_length=args.max_completion_length,
        max_tool_calling_iterations=args.max_tool_calls,
        learning_rate=args.learning_rate,
        # weights of reward_funcs; TRL adds the environment's get_reward with weight 1
        reward_weights=[args.proximity_weight, args.violation_weight],
        use_vllm=args.use_vllm,
        use_cpu=not torch.cuda.is_available(),  # a CPU run is a smoke test only
        bf16=torch.cuda.is_available() and torch.cuda.is_bf16_supported(),
        vllm_mode="colocate",
        logging_steps=1,
        log_completions=True,
        report_to="none",
    )
    trainer = GRPOTrainer(
        model=args.model,
        args=config,
        train_dataset=train_dataset,
        # the verified reward comes from the environment's get_reward (added by TRL)
        reward_funcs=[proximity_reward, violation_penalty],
        environment_factory=environment,
    )
    trainer.train()
    trainer.save_model(args.output_dir)


if __name__ == "__main__":
    main()
