"""Each element of a 256-column row replaced by the row's total."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x.sum(dim=1, keepdim=True).expand(-1, 256).contiguous()


def get_inputs():
    return [torch.rand(4096, 256)]


def get_init_inputs():
    return []
