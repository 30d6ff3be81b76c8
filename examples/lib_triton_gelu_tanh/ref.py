import torch
import torch.nn.functional as F


class Model(torch.nn.Module):
    def forward(self, x):
        return F.gelu(x, approximate="tanh")


def get_inputs():
    return [torch.randn(8192, 768)]


def get_init_inputs():
    return []
