import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x.mean(dim=1)


batch = 16
mid = 256
dim = 1024


def get_inputs():
    return [torch.randn(batch, mid, dim)]


def get_init_inputs():
    return []
