"""A tag naming a run by date, torch version and device, so committed results never collide."""

from __future__ import annotations

import datetime
import platform
import re

import torch


def device_name(device: str) -> str:
    """Human-readable device: the GPU's name for CUDA, the CPU model otherwise."""
    if device == "cuda":
        return torch.cuda.get_device_name(0)
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-")


def run_tag(device: str, today: datetime.date | None = None) -> str:
    """e.g. `2026-11-30_torch-2.13.0_nvidia-h200` (CPU: `..._cpu-amd-epyc`)."""
    today = today or datetime.date.today()
    name = slug(device_name(device))[:40]
    if device != "cuda":
        name = f"cpu-{name}" if not name.startswith("cpu") else name
    version = torch.__version__.split("+")[0]
    return f"{today.isoformat()}_torch-{version}_{name}"
