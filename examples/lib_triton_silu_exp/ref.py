import torch
import torch.nn.functional as F


class Model(torch.nn.Module):
    def forward(self, x):
        return F.silu(x)


def get_inputs():
    return [torch.randn(4096, 11008)]


def get_init_inputs():
    return []
